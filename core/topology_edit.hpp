// Editing a topology (what the Designer does, without a window): painting a layer's block, keeping block
// numbers contiguous in order of first use, presets that keep the rest of the design, resizing the depth, and
// merging tied head pairs (from DirectShare) into a design. Every edit that has to drop something says what,
// and why.
#pragma once

#include <optional>
#include <string>

#include "core/topology.hpp"
#include "core/topology_presets.hpp"

namespace sharelens {

enum class DesignColumn { Attention, Ffn };

// Assigns `block` to `layer` in a column (block == uniqueBlocks() starts a new block), then renumbers.
// Returns the number the painted block has after renumbering: a stroke over several layers paints each with
// what the previous one returned, so that they all get the one block (renumbering may have renamed it).
int64_t paintBlock(Topology& topology, DesignColumn column, int64_t layer, int64_t block);
// Renumbers blocks 0..U-1 in order of first use (what validateTopology requires: no gaps).
void renumberBlocks(BlockSharing& sharing);
// Replaces both assignments with a preset pattern for the current depth, keeping everything else (interior
// FFN tying too, rebuilt at its k where the depth allows), and names the design (describeDesign). Tied head
// pairs need unshared attention, so they are dropped when the pattern shares it: the returned note says so
// ("" when nothing was dropped).
std::string applyPattern(Topology& topology, SharingPattern pattern, int64_t unique);
// Changes the number of layers. A topology whose attention is a pattern (recognizePattern) is built again
// from it at the new depth with the same unique blocks U (vanilla: every layer its own; at most the new
// depth), its interior FFN tying kept at its k; anything else (a painted design, or a pattern that has no
// form at the new depth, as Bulge under 3 blocks) has its assignments extended or cut: new layers get new
// blocks. Either way it is named for what it now is (describeDesign). Never throws.
void resizeLayers(Topology& topology, int64_t layers);
// The pattern a column's assignment is (at its own U), if any: what a painted design that happens to be a
// pattern is recognised as. Where several patterns assign alike (any at U = 1, vanilla and sequence at
// U = L), `preferred` (the design's own, provenance.pattern) when it is one of them.
std::optional<SharingPattern> recognizePattern(const BlockSharing& sharing, int64_t layers,
                                               std::optional<SharingPattern> preferred = std::nullopt);
// k when the FFN assignment is interior FFN tying (interiorTieAssignment(layers, k), two interior layers or
// more) and not simply the attention's pattern.
std::optional<int64_t> recognizeInteriorTie(const Topology& topology);
// A name for what the design is, from its structure alone: "{pattern|custom}-L{L}-U{U}", then what else it
// has: "-ffn-tied{k}" (interior FFN tying) or "-ffnU{U}" (another FFN assignment), "-lora{r}" ("-ffnlora{r}"
// where the FFN's rank differs), "-heads-r{r}" / "-qkv-r{r}" (head / QKV sharing), "-masa{S}-{projections}",
// "-ties{n}" (DirectShare ties), "-tied" (embeddings), "-emb{r}" (factorised embedding). The Designer names a
// design by it after every edit until the user names it.
std::string describeDesign(const Topology& topology);
// Keeps head_dim = d_model / heads after an edit of d_model or heads (rounded to an even number).
void syncHeadDim(ModelDims& dims);

// Adds `incoming`'s tied head pairs to `design` when the two have the same shape (layers, heads, KV heads)
// and the design's attention is unshared; a pair whose target is already tied in the design keeps the
// design's. Returns how many pairs were added; a named Error (nothing changed) when they cannot be merged.
int64_t mergeTiedHeads(Topology& design, const Topology& incoming);

}  // namespace sharelens
