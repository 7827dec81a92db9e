// The low-rank sharing paper's embedding experiment (Fig. 2c): truncate a trained embedding to rank r -- its
// best rank-r approximation, from the SVD -- and evaluate the model with it. Tied models truncate the one
// table (input and output change together); untied models truncate the input embedding and the output head,
// each to rank r. Everything else is the checkpoint's. Torch-free interface.
#pragma once

#include <filesystem>
#include <vector>

#include "core/task.hpp"
#include "trainer/evaluate.hpp"

namespace sharelens {

struct TruncatedEmbeddingLoss {
  int64_t rank = 0;  // 0: the checkpoint as stored (full rank), for reference
  EvalResult eval;
};

// One entry for the full model, then one per rank (each in [1, d_model]), all on the same held-out tokens.
std::vector<TruncatedEmbeddingLoss> truncatedEmbeddingLosses(const std::filesystem::path& checkpoint,
                                                             const std::vector<int64_t>& ranks,
                                                             const EvalOptions& options,
                                                             const TaskContext& ctx);

}  // namespace sharelens
