#include "analysis/difference_maps.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace sharelens {
namespace {

double squaredNorm(const float* p, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * p[i];
  return s;
}

}  // namespace

RankMap rankMapFromPairs(const std::vector<GramSpectrum>& pairs, const std::vector<double>& squaredNorms,
                         double threshold) {
  RankMap map;
  map.n = static_cast<int64_t>(squaredNorms.size());
  map.rank.assign(static_cast<size_t>(map.n * map.n), 0);
  map.relativeDifference.assign(static_cast<size_t>(map.n * map.n), 0.0f);
  const auto order = allPairs(squaredNorms.size());
  for (size_t p = 0; p < order.size(); ++p) {
    const auto [a, b] = order[p];
    const int32_t r = static_cast<int32_t>(effectiveRank(pairs[p].eigenvalues, pairs[p].trace, threshold));
    const double scale = std::sqrt(0.5 * (squaredNorms[a] + squaredNorms[b]));
    const float rel =
        scale > 0.0 ? static_cast<float>(std::sqrt(std::max(pairs[p].trace, 0.0)) / scale) : 0.0f;
    for (auto [i, j] : {std::pair{a, b}, std::pair{b, a}}) {
      map.rank[i * static_cast<size_t>(map.n) + j] = r;
      map.relativeDifference[i * static_cast<size_t>(map.n) + j] = rel;
    }
  }
  return map;
}

HeadDiffResult computeHeadDifferences(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                      const HeadDiffOptions& options, const TaskContext& ctx) {
  if (!view.hasHeads())
    throw Error({.what = "head differences need the head count and head_dim",
                 .where = view.source,
                 .hint = "put the model's config.json next to the weights"});
  HeadDiffResult result;
  result.threshold = options.threshold;
  result.headDim = view.shape.headDim;
  result.hidden = view.shape.hidden;
  const int64_t hd = view.shape.headDim;
  std::vector<Proj> projs = {Proj::Q, Proj::K, Proj::V};
  if (options.includeOutput) projs.push_back(Proj::O);
  for (const LayerView& layer : view.layers) {
    ctx.throwIfCancelled();
    const LayerWeights w = loadLayer(ckpt, view, layer.index, ctx, projs);
    // Every head as hd rows of one (N * hd) x hidden matrix: Q, K and V are already row-stacked heads; an O
    // head is a column block of W_o, stacked transposed.
    HeadDiffLayer out;
    out.layer = layer.index;
    int64_t rows = 0;
    for (Proj p : projs) rows += p == Proj::O ? w.at(p).cols : w.at(p).rows;
    FloatMatrix stacked(rows, view.shape.hidden);
    int64_t at = 0;
    std::vector<double> norms;
    for (Proj p : projs) {
      const FloatMatrix& m = w.at(p);
      const int64_t heads = (p == Proj::O ? m.cols : m.rows) / hd;
      for (int64_t h = 0; h < heads; ++h) {
        out.labels.push_back(headLabel({p, h}));
        out.heads.push_back({p, h});
        if (p == Proj::O) {
          for (int64_t c = 0; c < hd; ++c)
            for (int64_t r = 0; r < m.rows; ++r) stacked(at + c, r) = m(r, h * hd + c);
        } else {
          std::copy(m.row(h * hd), m.row((h + 1) * hd), stacked.row(at));
        }
        norms.push_back(squaredNorm(stacked.row(at), static_cast<size_t>(hd * stacked.cols)));
        at += hd;
      }
    }
    const auto pairs = backend.blockPairDifferenceSpectra(stacked, hd, ctx);
    out.map = rankMapFromPairs(pairs, norms, options.threshold);
    for (double n : norms) out.norms.push_back(static_cast<float>(std::sqrt(n)));
    result.layers.push_back(std::move(out));
    ctx.report(static_cast<double>(layer.index + 1) / static_cast<double>(view.layers.size()),
               "head differences: layer " + std::to_string(layer.index));
  }
  for (const HeadDiffLayer& l : result.layers)
    for (int64_t a = 0; a < l.map.n; ++a)
      for (int64_t b = a + 1; b < l.map.n; ++b) {
        const int zeros =
            (l.norms[static_cast<size_t>(a)] == 0.0f) + (l.norms[static_cast<size_t>(b)] == 0.0f);
        result.lowest.push_back({l.layer, a, b, l.labels[static_cast<size_t>(a)],
                                 l.labels[static_cast<size_t>(b)], l.map.rankAt(a, b),
                                 l.map.relativeDifference[static_cast<size_t>(a * l.map.n + b)],
                                 zeros == 2   ? "both are zero matrices"
                                 : zeros == 1 ? "one is a zero matrix"
                                              : ""});
      }
  std::sort(result.lowest.begin(), result.lowest.end(), [](const HeadPair& x, const HeadPair& y) {
    return x.rank != y.rank ? x.rank < y.rank : x.relativeDifference < y.relativeDifference;
  });
  if (result.lowest.size() > options.lowestCount) result.lowest.resize(options.lowestCount);
  return result;
}

FloatMatrix comparableHeadMatrix(const Checkpoint& ckpt, const ModelView& view, int64_t layer, HeadId head) {
  const FloatMatrix m = materializeFinite(ckpt, view.headMatrix(layer, head.proj, head.head));
  if (head.proj != Proj::O) return m;
  FloatMatrix t(m.cols, m.rows);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) t(c, r) = m(r, c);
  return t;
}

std::string headLabel(HeadId head) {
  return std::string(projName(head.proj)) + std::to_string(head.head);
}

HeadId parseHeadLabel(std::string_view label, const std::string& where) {
  const auto proj = label.empty() ? std::nullopt : parseProj(label.substr(0, 1));
  const std::string_view number = label.empty() ? label : label.substr(1);
  const bool digits = !number.empty() && number.size() < 9 && (number == "0" || number[0] != '0') &&
                      std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!proj || !isAttentionProj(*proj) || !digits)
    throw Error(
        {.what = "not a head label",
         .where = where,
         .expected = "q, k, v or o followed by the head's number, as the head maps label rows (q0, k3)",
         .found = std::string(label)});
  return {*proj, std::stoll(std::string(number))};
}

MatrixSpectrum headPairSpectrum(const Checkpoint& ckpt, const ModelView& view, int64_t layer, HeadId a,
                                HeadId b, LinalgBackend& backend, double threshold, const TaskContext& ctx) {
  FloatMatrix diff = comparableHeadMatrix(ckpt, view, layer, a);
  const FloatMatrix other = comparableHeadMatrix(ckpt, view, layer, b);
  if (diff.rows != other.rows || diff.cols != other.cols)  // cannot happen for heads of one layer
    throw Error({.what = "heads of different shapes",
                 .where = "layer " + std::to_string(layer) + ": " + headLabel(a) + " - " + headLabel(b),
                 .expected = std::to_string(diff.rows) + " x " + std::to_string(diff.cols),
                 .found = std::to_string(other.rows) + " x " + std::to_string(other.cols)});
  for (size_t i = 0; i < diff.data.size(); ++i) diff.data[i] -= other.data[i];
  MatrixSpectrum result;
  result.id.name = "layer " + std::to_string(layer) + ": " + headLabel(a) + " - " + headLabel(b);
  result.spectrum = computeSpectrum(diff, backend, threshold, ctx);
  return result;
}

RankMap pairwiseDifferenceMap(std::span<const FloatMatrix> matrices, LinalgBackend& backend, double threshold,
                              const TaskContext& ctx) {
  std::vector<const FloatMatrix*> pointers;
  std::vector<double> norms;
  for (const FloatMatrix& m : matrices) {
    pointers.push_back(&m);
    norms.push_back(squaredNorm(m.data.data(), m.data.size()));
  }
  return rankMapFromPairs(backend.pairDifferenceSpectra(pointers, ctx), norms, threshold);
}

LayerDiffResult computeLayerDifferences(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                        double threshold, std::span<const Proj> projections,
                                        const TaskContext& ctx) {
  LayerDiffResult result;
  result.threshold = threshold;
  size_t done = 0;
  for (Proj p : projections) {
    ctx.throwIfCancelled();
    std::vector<FloatMatrix> matrices;
    for (const LayerView& layer : view.layers) {
      if (!layer.has(p)) break;
      matrices.push_back(materializeFinite(ckpt, layer.at(p)));
    }
    ++done;
    if (matrices.size() != view.layers.size() || matrices.empty()) continue;  // e.g. GPT-2 has no gate
    LayerDiffMap map;
    map.proj = p;
    map.rows = matrices[0].rows;
    map.cols = matrices[0].cols;
    map.map = pairwiseDifferenceMap(matrices, backend, threshold, ctx);
    result.maps.push_back(std::move(map));
    ctx.report(static_cast<double>(done) / static_cast<double>(projections.size()),
               "layer differences: " + std::string(projName(p)));
  }
  return result;
}

}  // namespace sharelens
