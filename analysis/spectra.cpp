#include "analysis/spectra.hpp"

namespace sharelens {

Spectrum computeSpectrum(const FloatMatrix& m, LinalgBackend& backend, double threshold,
                         const TaskContext& ctx) {
  const FloatMatrix* one[] = {&m};
  return makeSpectrum(backend.gramSpectra(one, ctx).front(), m.rows, m.cols, threshold);
}

std::vector<MatrixSpectrum> computeSpectra(const Checkpoint& ckpt, const ModelView& view,
                                           LinalgBackend& backend, const SpectraOptions& options,
                                           const TaskContext& ctx) {
  std::vector<MatrixSpectrum> out;
  auto run = [&](std::vector<MatrixId>& ids, std::vector<FloatMatrix>& matrices) {
    std::vector<const FloatMatrix*> pointers;
    for (const FloatMatrix& m : matrices) pointers.push_back(&m);
    const auto grams = backend.gramSpectra(pointers, ctx);
    for (size_t i = 0; i < grams.size(); ++i)
      out.push_back(
          {std::move(ids[i]), makeSpectrum(grams[i], matrices[i].rows, matrices[i].cols, options.threshold)});
  };

  const size_t steps = view.layers.size() + (options.embeddings ? 1 : 0);
  if (options.embeddings) {
    std::vector<MatrixId> ids;
    std::vector<FloatMatrix> matrices;
    if (view.embedding) {
      ids.push_back({"embedding"});
      matrices.push_back(materializeFinite(ckpt, *view.embedding));
    }
    if (view.outputHead && !view.shape.tiedEmbeddings) {
      ids.push_back({"output_head"});
      matrices.push_back(materializeFinite(ckpt, *view.outputHead));
    }
    run(ids, matrices);
    ctx.report(1.0 / static_cast<double>(steps), "spectra: embeddings");
  }
  for (const LayerView& layer : view.layers) {
    ctx.throwIfCancelled();
    LayerWeights w = loadLayer(ckpt, view, layer.index, ctx);
    std::vector<MatrixId> ids;
    std::vector<FloatMatrix> matrices;
    const std::string base = "layers." + std::to_string(layer.index) + ".";
    for (Proj p : kAllProjs) {
      if (!w.proj[static_cast<int>(p)]) continue;
      if (options.perHead && isAttentionProj(p) && view.hasHeads())
        for (int64_t h = 0; h < view.headCount(p); ++h) {
          ids.push_back({base + std::string(projName(p)) + ".head." + std::to_string(h), layer.index, p, h});
          matrices.push_back(headSlice(view, w.at(p), p, h));
        }
      ids.push_back({base + std::string(projName(p)), layer.index, p, -1});
      matrices.push_back(std::move(*w.proj[static_cast<int>(p)]));
    }
    run(ids, matrices);
    ctx.report(
        static_cast<double>(layer.index + 1 + (options.embeddings ? 1 : 0)) / static_cast<double>(steps),
        "spectra: layer " + std::to_string(layer.index));
  }
  return out;
}

}  // namespace sharelens
