#include "analysis/weights.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace sharelens {

const FloatMatrix& LayerWeights::at(Proj p) const {
  const auto& m = proj[static_cast<int>(p)];
  if (!m)
    throw Error(
        {.what = "layer " + std::to_string(layer) + " has no '" + std::string(projName(p)) + "' projection",
         .where = source,
         .expected = "a " + std::string(projName(p)) + " weight in every layer",
         .hint = "`sharelens inspect` lists what the checkpoint holds; this analysis needs that projection"});
  return *m;
}

LayerWeights loadLayer(const Checkpoint& ckpt, const ModelView& view, int64_t layer, const TaskContext& ctx,
                       std::span<const Proj> projs) {
  LayerWeights w;
  w.layer = layer;
  w.source = view.source;
  const LayerView& lv = view.layers.at(static_cast<size_t>(layer));
  std::vector<Proj> present;
  for (Proj p : projs)
    if (lv.has(p)) present.push_back(p);
  parallelFor(present.size(), ctx, [&](size_t i) {
    w.proj[static_cast<int>(present[i])] = materializeFinite(ckpt, lv.at(present[i]));
  });
  return w;
}

FloatMatrix rowBlock(const FloatMatrix& m, int64_t row0, int64_t rows) {
  FloatMatrix out(rows, m.cols);
  std::copy(m.row(row0), m.row(row0) + rows * m.cols, out.data.begin());
  return out;
}

FloatMatrix colBlock(const FloatMatrix& m, int64_t col0, int64_t cols) {
  FloatMatrix out(m.rows, cols);
  for (int64_t r = 0; r < m.rows; ++r) std::copy(m.row(r) + col0, m.row(r) + col0 + cols, out.row(r));
  return out;
}

FloatMatrix headSlice(const ModelView& view, const FloatMatrix& projection, Proj p, int64_t head) {
  const int64_t hd = view.shape.headDim;
  return p == Proj::O ? colBlock(projection, head * hd, hd) : rowBlock(projection, head * hd, hd);
}

}  // namespace sharelens
