// Matrix PCA (MASA on pretrained weights, DESIGN.md section 4): for a projection and a group of layers G,
// stack vec(W_l) as the columns of X (d*h x |G|) and take its thin SVD X = U S V^T. The atoms are the
// columns of U reshaped to the weight's shape, the coefficients C = U^T X = S V^T (S x |G|), and keeping
// the first S atoms explains sum_{s<=S} s_s^2 / ||X||_F^2 of the variance. Computed through the |G| x |G|
// Gram X^T X (entries <W_l, W_m>) in double.
#pragma once

#include <optional>
#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/weights.hpp"

namespace sharelens {

struct MatrixPcaGroup {
  Proj proj = Proj::Q;
  std::vector<int64_t> layers;              // the group G
  std::vector<double> singularValues;       // s_1 >= ... >= s_|G|
  std::vector<double> explainedVariance;    // cumulative, for S = 1..|G|
  std::vector<double> reconstructionError;  // ||X - U_S U_S^T X||_F / ||X||_F, for S = 1..|G|
  FloatMatrix coefficients;                 // |G| x |G|: row s = atom, column = layer
  FloatMatrix layerError;                   // |G| x |G|: row S-1 = atoms kept, column = layer: relative error
  std::vector<FloatMatrix> atoms;           // filled only when asked for; each shaped like W_l
};

struct MatrixPcaOptions {
  std::vector<Proj> projections = {Proj::Q, Proj::K, Proj::V, Proj::O};
  std::vector<std::vector<int64_t>> groups;  // empty: one group of all layers
  bool keepAtoms = false;
};

// Matrix PCA of matrices already in memory (one projection's W_l for the layers of one group, equal shapes).
MatrixPcaGroup matrixPcaOfMatrices(Proj proj, const std::vector<int64_t>& layers,
                                   const std::vector<FloatMatrix>& w, bool keepAtoms);

std::vector<MatrixPcaGroup> computeMatrixPca(const Checkpoint& ckpt, const ModelView& view,
                                             const MatrixPcaOptions& options, const TaskContext& ctx);

// MASA layer groups from the logit-lens KL drift between consecutive layers, drift[l] = KL(p_l || p_{l+1})
// (the MASA paper's grouping strategy: groups of consecutive blocks with small intra-group drift). With G
// groups the boundaries go where the drift is largest: after layer l for the G-1 largest drift[l] (ties to
// the earlier layer), which makes the largest drift left inside any group as small as it can be.
std::vector<std::vector<int64_t>> groupsFromKlDrift(const std::vector<double>& drift, int64_t layers,
                                                    int64_t groups);
// The older reading, kept as the named option "kl-peaks": a new group starts after each local maximum.
std::vector<std::vector<int64_t>> groupsAtKlPeaks(const std::vector<double>& drift, int64_t layers);
// The G of "kl", the default grouping: 3 groups (the MASA paper's), or one per layer on a model of fewer
// layers (klGroupCount). A G typed as "kl:G" is taken as it is, and checked against the layers.
constexpr int64_t kKlDefaultGroups = -1;
// "kl" (kKlDefaultGroups), "kl:G" or "kl-peaks" -> G (0 for kl-peaks); nullopt for anything else (explicit
// groups).
std::optional<int64_t> parseKlGrouping(const std::string& spec);
// The number of groups G asks of a model of `layers` layers: kKlDefaultGroups -> min(3, layers), else G.
int64_t klGroupCount(int64_t g, int64_t layers);

// "0-5,6-11" or "0,1,2;3,4" -> groups of layer indices, each validated against `layers`.
std::vector<std::vector<int64_t>> parseLayerGroups(const std::string& text, int64_t layers);

// The learned dictionaries of a ShareLens checkpoint trained with MASA: for each projection and layer group,
// the atoms D_s and the coefficient table (atoms x the group's layers). Empty for other checkpoints.
struct TrainedDictionary {
  Proj proj = Proj::Q;
  int64_t group = 0;
  std::vector<int64_t> layers;
  std::vector<FloatMatrix> atoms;
  FloatMatrix coefficients;  // S x |layers|
};
std::vector<TrainedDictionary> trainedDictionaries(const Checkpoint& checkpoint);

// What the views show of a learned dictionary: its atom correlation map and its coefficient table.
struct LearnedDictionaryMap {
  Proj proj = Proj::Q;
  int64_t group = 0;
  std::vector<int64_t> layers;
  FloatMatrix correlation;   // S x S, Phi below
  FloatMatrix coefficients;  // S x |layers|
};
std::vector<LearnedDictionaryMap> learnedDictionaryMaps(const Checkpoint& checkpoint);

// Atom correlation map Phi(D_i, D_j) = tr(D_i^T D_j) / (||D_i||_F ||D_j||_F), S x S. For PCA atoms it is the
// identity; for trained MASA atoms it shows how much they overlap.
FloatMatrix atomCorrelation(std::span<const FloatMatrix> atoms);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<std::vector<MatrixPcaGroup>> kMasa{"masa"};
inline constexpr AnalysisId<std::vector<LearnedDictionaryMap>> kMasaTrained{"masa-trained"};
}  // namespace analyses

}  // namespace sharelens
