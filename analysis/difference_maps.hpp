// Effective-rank maps of weight differences (DESIGN.md section 4):
//   head differences  -- per layer, every pair among all its per-head attention matrices, as the low-rank
//                        sharing paper computes them: Q, K, V heads (head_dim x hidden; GQA: the layer's KV
//                        heads, not repeated) and O heads (the head's columns of W_o, hidden x head_dim,
//                        taken transposed -- a transpose changes no singular value); an N x N map, N = 2
//                        heads + 2 kv_heads (heads + 2 kv_heads with O left out);
//   layer differences -- per projection, W_l - W_m for every pair of layers, an L x L map.
// Each cell also carries the relative difference ||W_a - W_b||_F / sqrt((||W_a||_F^2 + ||W_b||_F^2) / 2).
#pragma once

#include <span>
#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/backend.hpp"
#include "analysis/spectra.hpp"
#include "analysis/weights.hpp"

namespace sharelens {

// A symmetric n x n map, row-major; the diagonal is 0 (a matrix minus itself).
struct RankMap {
  int64_t n = 0;
  std::vector<int32_t> rank;
  std::vector<float> relativeDifference;
  int32_t rankAt(int64_t i, int64_t j) const { return rank[static_cast<size_t>(i * n + j)]; }
};

struct HeadDiffOptions {
  double threshold = 0.95;
  size_t lowestCount = 50;    // pairs kept in HeadDiffResult::lowest
  bool includeOutput = true;  // O heads beside Q, K and V (false: Q, K, V only)
};

struct HeadId {
  Proj proj = Proj::Q;
  int64_t head = 0;
};

struct HeadDiffLayer {
  int64_t layer = 0;
  std::vector<HeadId> heads;        // what each row/column is (the labels, structured)
  std::vector<std::string> labels;  // "q0".."q{H-1}", "k0".., "v0"..,  "o0".. (when included)
  std::vector<float> norms;         // ||W_head||_F of each label
  RankMap map;
};

struct HeadPair {
  int64_t layer = 0;
  int64_t a = 0, b = 0;
  std::string labelA, labelB;
  int32_t rank = 0;
  float relativeDifference = 0;
  std::string
      note;  // "both are zero matrices" / "one is a zero matrix": a rank that says nothing about sharing
};

struct HeadDiffResult {
  double threshold = 0.95;
  int64_t headDim = 0, hidden = 0;
  std::vector<HeadDiffLayer> layers;
  std::vector<HeadPair> lowest;  // the lowest-rank pairs across the model, rank then relative difference
};

HeadDiffResult computeHeadDifferences(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                      const HeadDiffOptions& options, const TaskContext& ctx);

struct LayerDiffMap {
  Proj proj = Proj::Q;
  int64_t rows = 0, cols = 0;  // shape of each W_l
  RankMap map;                 // n = layers
};

struct LayerDiffResult {
  double threshold = 0.95;
  std::vector<LayerDiffMap> maps;
};

LayerDiffResult computeLayerDifferences(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                        double threshold, std::span<const Proj> projections,
                                        const TaskContext& ctx);

// A head's matrix as the head maps compare it: head_dim x hidden (an O head, hidden x head_dim, transposed).
FloatMatrix comparableHeadMatrix(const Checkpoint& ckpt, const ModelView& view, int64_t layer, HeadId head);

// A head as the maps label it: {K, 3} <-> "k3". parseHeadLabel throws a named Error (at `where`) for text
// that is not a projection letter of q, k, v, o followed by a head number.
std::string headLabel(HeadId head);
HeadId parseHeadLabel(std::string_view label, const std::string& where);

// The singular values of one cell of a head map: W_a - W_b of two heads of a layer, each as
// comparableHeadMatrix gives it (what the Heads view shows for a clicked cell and `export --view
// head-pair-spectrum` draws), named "layer L: a - b". Throws a named Error for a layer or head out of range.
MatrixSpectrum headPairSpectrum(const Checkpoint& ckpt, const ModelView& view, int64_t layer, HeadId a,
                                HeadId b, LinalgBackend& backend, double threshold, const TaskContext& ctx);

// Fills a RankMap from all-pairs spectra (pair order of allPairs) and each item's ||.||_F^2.
RankMap rankMapFromPairs(const std::vector<GramSpectrum>& pairs, const std::vector<double>& squaredNorms,
                         double threshold);

// The effective rank of M_a - M_b for every pair of equal-shape matrices (layer weights of one projection,
// or the layers' residual-stream contributions dh_l over the same tokens) as an n x n map.
RankMap pairwiseDifferenceMap(std::span<const FloatMatrix> matrices, LinalgBackend& backend, double threshold,
                              const TaskContext& ctx);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<HeadDiffResult> kHeads{"heads"};
inline constexpr AnalysisId<LayerDiffResult> kLayers{"layers"};
}  // namespace analyses

}  // namespace sharelens
