// Calibration for compressing a pretrained model (issue 10; the MASA paper's data-aware refinement and
// SVD-LLM's whitening): run the model over N calibration tokens and accumulate, for every layer, the
// autocorrelation X = sum_t x_t x_t^T of each attention projection's input -- Q, K and V share one input (the
// normed residual, d x d), O has its own (the heads' outputs, H hd x H hd) -- in double precision, streaming
// a window at a time (never all activations in memory); and, over the same tokens, the logit-lens KL drift
// MASA groups layers by. Torch-free interface.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/symmetric.hpp"
#include "core/task.hpp"

namespace sharelens {

struct CalibrationOptions {
  std::string corpus = "brown";  // text: the corpus's training documents, with the checkpoint's own tokenizer
  int64_t tokens = 0;            // 0: defaultCalibrationTokens() of the model
  std::string logitLens = "per-sample";  // the KL drift's lens (checkLogitLens): per-sample or mean-state
  std::vector<int> tokenIds;             // when given: exactly these tokens instead of corpus text
  int64_t chunk = 512;                   // tokens per forward pass (capped at the model's context)
  std::string device = "cpu";
  int threads = 0;
};

// The default calibration size for a model whose widest projection input is n (max(d, H hd)): 8 n tokens,
// at least 2,048. An autocorrelation of N samples of n-dimensional inputs is singular for N < n and badly
// conditioned near it (for isotropic inputs its smallest eigenvalue falls as (1 - sqrt(n / N))^2, 0.42 of
// the mean at N = 8 n, 0 at N = n), and the whitening divides by it.
int64_t defaultCalibrationTokens(int64_t widestInput);

struct LayerInputAutocorrelation {
  PackedSymmetric attentionInput;  // d x d: the input of Q, K and V
  PackedSymmetric outputInput;     // H hd x H hd: the input of O
};

struct CalibrationResult {
  int64_t tokens = 0;
  std::string text;  // "training split of brown, 2048 tokens" or "token ids given by the caller"
  std::string tokenizer;
  std::vector<LayerInputAutocorrelation> layers;
  std::vector<double> klDrift;  // KL(p_l || p_{l+1}) of the grouping probe over the same tokens
  std::string logitLens;        // the lens behind it (per-sample or mean-state)
  double seconds = 0;
  int64_t peakResidentBytes = 0;
};

// Named errors: fewer calibration tokens than the widest projection input (its autocorrelation would be
// singular), a checkpoint with neither a tokenizer nor token ids, ids outside the vocabulary.
CalibrationResult calibrate(const std::filesystem::path& checkpoint, const CalibrationOptions& options,
                            const TaskContext& ctx);

}  // namespace sharelens
