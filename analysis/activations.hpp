// What the analyses keep of running the model over text (DESIGN.md section 4): the effective-rank map of the
// layer-output differences dh_l - dh_m, the logit-lens KL drift with the MASA groups it implies, and the
// attention-map similarity between heads. The raw residual contributions are not kept (they are large).
#pragma once

#include "analysis/difference_maps.hpp"
#include "analysis/registry.hpp"

namespace sharelens {

struct ActivationResults {
  int64_t tokens = 0, layers = 0;
  std::string corpus, tokenizer;
  std::vector<int> tokenIds;
  double threshold = 0.95;
  RankMap layerOutputs;                      // L x L
  std::vector<double> klDrift;               // KL(p_l || p_{l+1}), l = 0..L-2
  std::vector<std::vector<int64_t>> groups;  // MASA groups from the drift
  std::string logitLens = "per-sample";      // which lens gave the drift (trainer/forward_probe.hpp)
  int64_t klGroupCount = 3;                  // the G of "kl:G" (0: split after local maxima)
  int64_t logitLensTokens = 0;
  FloatMatrix attentionSimilarity;  // (L H)^2
  std::vector<std::string> headLabels;
  int64_t attentionTokens = 0;
  double forwardSeconds = 0, logitLensSeconds = 0, rankMapSeconds = 0;
  int64_t peakResidentBytes = 0;
};

ActivationResults analyseActivations(const ActivationData& data, LinalgBackend& backend,
                                     const AnalysisParams& params, const TaskContext& ctx);

}  // namespace sharelens
