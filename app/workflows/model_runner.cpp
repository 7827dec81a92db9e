#include "app/workflows/model_runner.hpp"

#include "trainer/embedding_truncation.hpp"
#include "trainer/forward_probe.hpp"

namespace sharelens {

ModelRunner makeModelRunner(const std::filesystem::path& checkpoint, std::string device, int threads) {
  return [checkpoint, device, threads](const AnalysisParams& p, const TaskContext& ctx) {
    ProbeOptions o;
    o.tokens = p.tokenIds.empty() ? p.activationTokens : static_cast<int64_t>(p.tokenIds.size());
    o.corpus = p.corpus;
    o.logitLens = p.logitLens;
    o.logitLensTokens = p.logitLensTokens;
    o.attentionTokens = p.attentionTokens;
    o.tokenIds = p.tokenIds;
    o.device = device;
    o.threads = threads;
    return probeCheckpoint(checkpoint, o, ctx);
  };
}

EmbeddingScorer makeEmbeddingScorer(const std::filesystem::path& checkpoint, int threads) {
  return [checkpoint, threads](const std::vector<int64_t>& ranks, const AnalysisParams& p,
                               const TaskContext& ctx) {
    EvalOptions e;
    if (p.tokenIds.empty())
      e.corpus = p.corpus;  // unset for ids; the run's own corpus when the checkpoint is a run's
    e.tokens = p.embeddingLossTokens;
    e.tokenIds = p.tokenIds;
    e.threads = threads;
    const auto losses = truncatedEmbeddingLosses(checkpoint, ranks, e, ctx);
    TruncatedEmbeddingScores s;
    s.storedNll = losses.front().eval.nll;
    s.text = losses.front().eval.text + ", " + std::to_string(losses.front().eval.tokens) + " tokens";
    for (size_t i = 1; i < losses.size(); ++i) s.nll.push_back(losses[i].eval.nll);
    return s;
  };
}

ModelServices makeModelServices(const std::filesystem::path& checkpoint, const std::string& device,
                                int threads) {
  return {makeModelRunner(checkpoint, device, threads), makeEmbeddingScorer(checkpoint, threads)};
}

}  // namespace sharelens
