// Editing a topology (what the Designer does, without a window): painting a layer's block, keeping block
// numbers contiguous in order of first use, presets that keep the rest of the design, resizing the depth, and
// merging tied head pairs (from DirectShare) into a design. Every edit that has to drop something says what,
// and why.
#pragma once

#include "core/topology.hpp"
#include "core/topology_presets.hpp"

namespace sharelens {

enum class DesignColumn { Attention, Ffn };

// Assigns `block` to `layer` in a column (block == uniqueBlocks() starts a new block), then renumbers.
void paintBlock(Topology& topology, DesignColumn column, int64_t layer, int64_t block);
// Renumbers blocks 0..U-1 in order of first use (what validateTopology requires: no gaps).
void renumberBlocks(BlockSharing& sharing);
// Replaces both assignments with a preset pattern for the current depth, keeping everything else. Tied head
// pairs need unshared attention, so they are dropped when the pattern shares it: the returned note says so
// ("" when nothing was dropped).
std::string applyPattern(Topology& topology, SharingPattern pattern, int64_t unique);
// Changes the number of layers. A topology that is a pattern (provenance.pattern names one, attention and
// FFN assigned alike) is built again from it at the new depth with the same unique blocks U (vanilla: every
// layer its own; at most the new depth), and named for what it now is ("cycle-L8-U3"). Anything else (a
// painted design, tied interior FFNs) has its assignments extended or cut: new layers get new blocks.
void resizeLayers(Topology& topology, int64_t layers);
// Keeps head_dim = d_model / heads after an edit of d_model or heads (rounded to an even number).
void syncHeadDim(ModelDims& dims);

// Adds `incoming`'s tied head pairs to `design` when the two have the same shape (layers, heads, KV heads)
// and the design's attention is unshared; a pair whose target is already tied in the design keeps the
// design's. Returns how many pairs were added; a named Error (nothing changed) when they cannot be merged.
int64_t mergeTiedHeads(Topology& design, const Topology& incoming);

}  // namespace sharelens
