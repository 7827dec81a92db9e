// Reading the view's matrices for analysis: whole projections read once, in parallel, and per-head
// matrices sliced from them in memory (no second pass over the file).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model_view.hpp"
#include "core/task.hpp"

namespace sharelens {

// Names a matrix in results: "embedding", "output_head", "layers.3.q", "layers.3.q.head.5".
struct MatrixId {
  std::string name;
  int64_t layer = -1;
  std::optional<Proj> proj;
  int64_t head = -1;  // -1: the whole projection
};

// A layer's projections materialised (absent ones stay empty).
struct LayerWeights {
  int64_t layer = 0;
  std::string source;  // the checkpoint, for error messages
  std::array<std::optional<FloatMatrix>, kProjCount> proj;
  const FloatMatrix& at(Proj p) const;
};

LayerWeights loadLayer(const Checkpoint& ckpt, const ModelView& view, int64_t layer, const TaskContext& ctx,
                       std::span<const Proj> projs = kAllProjs);

// Per-head matrix cut from a loaded projection (GQA-aware, as ModelView::headMatrix).
FloatMatrix headSlice(const ModelView& view, const FloatMatrix& projection, Proj p, int64_t head);

FloatMatrix rowBlock(const FloatMatrix& m, int64_t row0, int64_t rows);
FloatMatrix colBlock(const FloatMatrix& m, int64_t col0, int64_t cols);

}  // namespace sharelens
