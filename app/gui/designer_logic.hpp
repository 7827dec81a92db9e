// Editing a topology in the designer, without a window: painting a layer's block, keeping block numbers
// contiguous in order of first use, presets that keep the rest of the design, and resizing the depth.
#pragma once

#include "core/topology.hpp"
#include "core/topology_presets.hpp"

namespace sharelens::gui {

enum class DesignColumn { Attention, Ffn };

// Assigns `block` to `layer` in a column (block == uniqueBlocks() starts a new block), then renumbers.
void paintBlock(Topology& topology, DesignColumn column, int64_t layer, int64_t block);
// Renumbers blocks 0..U-1 in order of first use (what validateTopology requires: no gaps).
void renumberBlocks(BlockSharing& sharing);
// Replaces both assignments with a preset pattern for the current depth, keeping everything else.
void applyPattern(Topology& topology, SharingPattern pattern, int64_t unique);
// Changes the number of layers, extending or cutting the assignments (new layers get new blocks).
void resizeLayers(Topology& topology, int64_t layers);
// Keeps head_dim = d_model / heads after an edit of d_model or heads (rounded to an even number).
void syncHeadDim(ModelDims& dims);

}  // namespace sharelens::gui
