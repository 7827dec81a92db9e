// PostShare as the head-wise shareable attention paper runs it (Cao et al. 2024, Sec. 4.3, Eq. 4-5): take a
// pretrained checkpoint, find its DirectShare pairs at ratio alpha, post-train it with
// L = L_train + gamma * L_w (L_w: the mean over pairs of the summed per-projection distances of W_q, W_k,
// W_v), then share the pairs. The outcome is compared at the same alpha, on the same held-out text:
//   original       the checkpoint as given
//   directshare    the checkpoint with the pairs shared, no training (DirectShare alone)
//   post-trained   after post-training, before sharing (what the penalty did to the loss)
//   postshare      after post-training, with the pairs shared
#pragma once

#include <filesystem>
#include <functional>

#include "analysis/directshare.hpp"
#include "trainer/evaluate.hpp"
#include "trainer/run_controller.hpp"

namespace sharelens {

// The paper's post-training settings (App. C.3: "The Adam optimizer with a learning rate of 5e-5 ... beta_1 =
// 0.9 and beta_2 = 0.95 ... the maximum context size and gamma are set to 4096 and 0.5"): the defaults of
// `train --postshare` where the user gives none (beta_2 = 0.95 is every run's default already).
inline constexpr double kPostShareGamma = 0.5;
inline constexpr double kPostShareLr = 5e-5;

struct PostShareOptions {
  std::filesystem::path init;  // the pretrained checkpoint (ShareLens or Hugging Face Llama layout)
  double ratio = 0.25;         // alpha
  double gamma = kPostShareGamma;
  int64_t maxContext = 256;      // sequence length of post-training (the topology's context is capped to it)
  TrainConfig config;            // post-training hyper-parameters (steps, lr, corpus, ...)
  EvalOptions eval;              // the held-out text every model is scored on
  std::filesystem::path outDir;  // OUT/run, OUT/directshare, OUT/postshare, OUT/postshare.json
};

struct PostShareReport {
  DirectShareResult pairs;
  EvalResult original, directShare, postTrained, postShare;
  RunState training = RunState::Failed;
  std::string message;
  Json toJson() const;
};

PostShareReport runPostShare(const PostShareOptions& options, const TaskContext& ctx,
                             const std::function<void(const StepMetrics&)>& onStep);

}  // namespace sharelens
