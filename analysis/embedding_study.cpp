#include "analysis/embedding_study.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace sharelens {

EmbeddingStudy computeEmbeddingStudy(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                     double threshold, const TaskContext& ctx) {
  if (!view.embedding)
    throw Error({.what = "the checkpoint has no token embedding",
                 .where = view.source,
                 .hint = "the embedding study needs the embedding matrix"});
  EmbeddingStudy s;
  const FloatMatrix e = materializeFinite(ckpt, *view.embedding);
  s.vocab = e.rows;
  s.hidden = e.cols;
  s.tied = view.shape.tiedEmbeddings;
  ctx.report(0.2, "embedding: spectrum");
  const FloatMatrix* one[] = {&e};
  s.spectrum = makeSpectrum(backend.gramSpectra(one, ctx).front(), e.rows, e.cols, threshold);

  const auto energy = s.spectrum.cumulativeEnergy();
  for (int pct = 5; pct <= 100; pct += 5) {
    FactorizationPoint p;
    p.rank = std::max<int64_t>(1, std::llround(pct / 100.0 * static_cast<double>(s.hidden)));
    p.rank = std::min<int64_t>(p.rank, static_cast<int64_t>(energy.size()));
    p.fractionOfHidden = static_cast<double>(p.rank) / static_cast<double>(s.hidden);
    p.relativeError =
        p.rank > 0 ? std::sqrt(std::max(0.0, 1.0 - energy[static_cast<size_t>(p.rank - 1)])) : 1.0;
    p.parameters = p.rank * (s.vocab + s.hidden);
    s.curve.push_back(p);
  }

  const RoleCounts counts = countParameters(ckpt, view);
  s.embeddingParameters = counts.of(TensorRole::Embedding) + counts.of(TensorRole::OutputHead);
  s.totalParameters = counts.total;
  s.rho =
      counts.total > 0 ? static_cast<double>(s.embeddingParameters) / static_cast<double>(counts.total) : 0.0;

  if (!s.tied && view.outputHead) {
    ctx.report(0.7, "embedding: tying gap");
    const FloatMatrix u = materializeFinite(ckpt, *view.outputHead);
    if (u.rows == e.rows && u.cols == e.cols) {
      std::vector<double> cosines(static_cast<size_t>(e.rows));
      s.tyingCosineHistogram.assign(40, 0);
      for (int64_t j = 0; j < e.rows; ++j) {
        double dot = 0, ne = 0, nu = 0;
        for (int64_t c = 0; c < e.cols; ++c) {
          dot += static_cast<double>(e(j, c)) * u(j, c);
          ne += static_cast<double>(e(j, c)) * e(j, c);
          nu += static_cast<double>(u(j, c)) * u(j, c);
        }
        const double cosine = ne > 0 && nu > 0 ? dot / std::sqrt(ne * nu) : 0.0;
        cosines[static_cast<size_t>(j)] = cosine;
        const int bin = std::clamp(static_cast<int>((cosine + 1.0) / 2.0 * 40.0), 0, 39);
        ++s.tyingCosineHistogram[static_cast<size_t>(bin)];
      }
      double sum = 0;
      for (double c : cosines) sum += c;
      s.tyingCosineMean = sum / static_cast<double>(cosines.size());
      std::nth_element(cosines.begin(), cosines.begin() + static_cast<std::ptrdiff_t>(cosines.size() / 2),
                       cosines.end());
      s.tyingCosineMedian = cosines[cosines.size() / 2];
    }
  }
  ctx.report(1.0, "embedding: done");
  return s;
}

}  // namespace sharelens
