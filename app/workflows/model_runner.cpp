#include "app/workflows/model_runner.hpp"

#include "trainer/forward_probe.hpp"

namespace sharelens {

ModelRunner makeModelRunner(const std::filesystem::path& checkpoint, std::string device, int threads) {
  return [checkpoint, device, threads](const AnalysisParams& p, const TaskContext& ctx) {
    ProbeOptions o;
    o.tokens = p.tokenIds.empty() ? p.activationTokens : static_cast<int64_t>(p.tokenIds.size());
    o.corpus = p.corpus;
    o.logitLensTokens = p.logitLensTokens;
    o.attentionTokens = p.attentionTokens;
    o.tokenIds = p.tokenIds;
    o.device = device;
    o.threads = threads;
    ProbeResult r = probeCheckpoint(checkpoint, o, ctx);
    ActivationData d;
    d.residualDeltas = std::move(r.residualDeltas);
    d.klDrift = std::move(r.klDrift);
    d.attentionSimilarity = std::move(r.attentionSimilarity);
    d.headLabels = std::move(r.headLabels);
    d.tokenIds = std::move(r.tokenIds);
    d.tokens = r.tokens;
    d.layers = r.layers;
    d.tokenizer = r.tokenizer;
    d.corpus = p.corpus;
    d.forwardSeconds = r.forwardSeconds;
    d.logitLensSeconds = r.logitLensSeconds;
    d.peakResidentBytes = r.peakResidentBytes;
    return d;
  };
}

}  // namespace sharelens
