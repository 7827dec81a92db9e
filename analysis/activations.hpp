// What the analyses keep of running the model over text (DESIGN.md section 4): the effective-rank map of the
// layer-output differences dh_l - dh_m, the logit-lens KL drift with the MASA groups it implies, and the
// attention-map similarity between heads. The raw residual contributions are not kept (they are large).
#pragma once

#include "analysis/analysis_ids.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/registry.hpp"

namespace sharelens {

// The forward pass's summary (core/activation_data.hpp) and what the analysis made of it.
struct ActivationResults : ActivationSummary {
  double threshold = 0.95;
  RankMap layerOutputs;                      // L x L
  std::vector<std::vector<int64_t>> groups;  // MASA groups from the drift
  std::string logitLens = "per-sample";      // which lens gave the drift (trainer/forward_probe.hpp)
  int64_t klGroupCount = 3;                  // the G of "kl:G" (0: split after local maxima)
  double rankMapSeconds = 0;
};

ActivationResults analyseActivations(const ActivationData& data, LinalgBackend& backend,
                                     const AnalysisParams& params, const TaskContext& ctx);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<ActivationResults> kActivations{"activations"};
}  // namespace analyses

}  // namespace sharelens
