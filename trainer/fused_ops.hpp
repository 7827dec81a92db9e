// Fused CPU kernels for the training step's memory-bound elementwise work: RMSNorm, rotary position
// embedding, the SwiGLU product and the cross-entropy loss, forward and backward each in one or two passes
// instead of the three to eight of the composite ATen expressions. They apply to contiguous float32 CPU
// tensors; anything else (CUDA, bf16 autocast) takes the composite path, which is also the reference the
// tests compare the kernels with. The loops themselves are in trainer/cpu_kernels.
#pragma once

#include <torch/types.h>

namespace sharelens {

// x * rsqrt(mean(x^2, -1) + eps) * weight, over the last dimension. x: [..., d], weight: [d].
torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps);
torch::Tensor rmsNormReference(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// Rotate-half RoPE (Hugging Face Llama layout) of x: [B, T, H, hd] with cos, sin: [T', hd], T' >= T, whose
// two halves repeat (cos[t][i] == cos[t][i + hd/2]).
torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
torch::Tensor applyRopeReference(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// silu(gate) * up (SwiGLU's product), gate and up of one shape.
torch::Tensor swiglu(const torch::Tensor& gate, const torch::Tensor& up);
torch::Tensor swigluReference(const torch::Tensor& gate, const torch::Tensor& up);

// Q, K and V of the stacked projection qkv [B, T, (H + 2 Hkv) hd] (each token's Q heads, then K's, then
// V's), as packed [B, T, heads, hd] tensors with RoPE applied to q and k (cos, sin as for applyRope).
struct QkvHeads {
  torch::Tensor q, k, v;
};
QkvHeads splitQkvWithRope(const torch::Tensor& qkv, const torch::Tensor& cos, const torch::Tensor& sin,
                          int64_t heads, int64_t kvHeads);
QkvHeads splitQkvWithRopeReference(const torch::Tensor& qkv, const torch::Tensor& cos,
                                   const torch::Tensor& sin, int64_t heads, int64_t kvHeads);

// swiglu of the stacked gate and up projection gateUp [..., 2F] (gate first): [..., F].
torch::Tensor stackedSwiglu(const torch::Tensor& gateUp);
torch::Tensor stackedSwigluReference(const torch::Tensor& gateUp);

// Mean over rows of -log softmax(logits)[target]: logits [N, V], targets [N] (int64). The gradient is
// (softmax - onehot) / N, recomputed from the logits and each row's log-sum-exp.
torch::Tensor crossEntropy(const torch::Tensor& logits, const torch::Tensor& targets);
torch::Tensor crossEntropyReference(const torch::Tensor& logits, const torch::Tensor& targets);

// Per row -log softmax(logits)[target], in float64, without autograd (held-out evaluation): logits [N, V]
// float32, targets [N] int64 -> [N]. Rows are split over the run's threads (trainer/cpu_parallel.hpp). The
// reference is ATen's log_softmax in float64; other devices and dtypes take ATen's float32 log_softmax.
torch::Tensor tokenNll(const torch::Tensor& logits, const torch::Tensor& targets);
torch::Tensor tokenNllReference(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace sharelens
