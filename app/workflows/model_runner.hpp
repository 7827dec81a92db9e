// The ModelRunner the analyses use to run a checkpoint over text (analysis/registry.hpp): the trainer's
// forward probe, with the registry's parameters, its result handed over as ActivationData.
#pragma once

#include <filesystem>
#include <string>

#include "analysis/registry.hpp"

namespace sharelens {

// `device` "cpu" or "cuda"; `threads` 0 for all cores.
ModelRunner makeModelRunner(const std::filesystem::path& checkpoint, std::string device = "cpu",
                            int threads = 0);
// The held-out NLL at each embedding rank (trainer/embedding_truncation.hpp), on the registry's corpus or
// ids.
EmbeddingScorer makeEmbeddingScorer(const std::filesystem::path& checkpoint, int threads = 0);
// Both, for an AnalysisInput.
ModelServices makeModelServices(const std::filesystem::path& checkpoint, const std::string& device = "cpu",
                                int threads = 0);

}  // namespace sharelens
