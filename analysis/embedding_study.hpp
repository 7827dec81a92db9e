// Embedding study (DESIGN.md section 4): the token embedding's spectrum; the factorisation E ~ E_r P_r
// (V x r, r x d) for r from 5% to 100% of d with its relative reconstruction error (Eckart-Young:
// sqrt(sum_{i>r} sigma_i^2 / ||E||_F^2)) and parameter count r (V + d); the embedding proportion
// rho = N_emb / N_total; for untied models the tying-gap indicator, the mean cosine between input row e_j
// and output row u_j.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/backend.hpp"
#include "core/model_view.hpp"

namespace sharelens {

struct FactorizationPoint {
  int64_t rank = 0;
  double fractionOfHidden = 0;
  double relativeError = 0;
  int64_t parameters = 0;  // r (V + d)
  double validationNll =
      NAN;  // held-out NLL with the embedding truncated to this rank (Fig. 2c), when computed
};

struct EmbeddingStudy {
  int64_t vocab = 0, hidden = 0;
  Spectrum spectrum;
  std::vector<FactorizationPoint> curve;
  int64_t embeddingParameters = 0;  // input embedding + untied output head
  int64_t totalParameters = 0;
  double rho = 0;
  bool tied = false;
  std::optional<double> tyingCosineMean, tyingCosineMedian;
  std::vector<int64_t> tyingCosineHistogram;  // 40 bins over [-1, 1]
  double fullRankValidationNll = NAN;         // the same held-out NLL of the checkpoint as stored
  std::string validationText;                 // what those NLLs were computed on
};

EmbeddingStudy computeEmbeddingStudy(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                     double threshold, const TaskContext& ctx);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<EmbeddingStudy> kEmbedding{"embedding"};
inline constexpr AnalysisId<EmbeddingStudy> kEmbeddingLoss{"embedding-loss"};
}  // namespace analyses

}  // namespace sharelens
