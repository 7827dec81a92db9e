#include "analysis/activations.hpp"

#include <chrono>

#include "analysis/matrix_pca.hpp"

namespace sharelens {

ActivationResults analyseActivations(const ActivationData& data, LinalgBackend& backend,
                                     const AnalysisParams& params, const TaskContext& ctx) {
  ActivationResults r;
  r.tokens = data.tokens;
  r.layers = data.layers;
  r.corpus = params.tokenIds.empty() ? params.corpus : "token ids";
  r.tokenizer = data.tokenizer;
  r.tokenIds = data.tokenIds;
  r.threshold = params.threshold;
  const auto start = std::chrono::steady_clock::now();
  r.layerOutputs = pairwiseDifferenceMap(data.residualDeltas, backend, params.threshold, ctx);
  r.rankMapSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.klDrift = data.klDrift;
  r.logitLens = params.logitLens;
  r.klGroupCount = params.klGroups;
  r.groups = params.klGroups > 0 ? groupsFromKlDrift(data.klDrift, data.layers, params.klGroups)
                                 : groupsAtKlPeaks(data.klDrift, data.layers);
  r.logitLensTokens = data.logitLensTokens;
  r.attentionSimilarity = data.attentionSimilarity;
  r.headLabels = data.headLabels;
  r.attentionTokens = data.attentionTokens;
  r.forwardSeconds = data.forwardSeconds;
  r.logitLensSeconds = data.logitLensSeconds;
  r.peakResidentBytes = data.peakResidentBytes;
  return r;
}

}  // namespace sharelens
