// Scoring a loaded model on a token stream (trainer-internal: includes torch through inference_model.hpp).
// evaluateCheckpoint() uses it for a checkpoint as stored; callers that change a model in memory (truncated
// embeddings, compressed attention) score the same held-out text through it, so the numbers compare.
#pragma once

#include <vector>

#include "core/task.hpp"
#include "trainer/evaluate.hpp"
#include "trainer/inference_model.hpp"

namespace sharelens {

// Mean NLL of text.ids[1..] given the tokens before each in windows of `window` + 1 tokens, stride
// `window`. Fills tokens, window, nll, perplexity and the per-window and per-document sums; not source,
// text or timing.
EvalResult scoreTokens(const InferenceModel& model, const HeldOutText& text, int64_t window,
                       const TaskContext& ctx);

}  // namespace sharelens
