// Fused CPU kernels for the training step's memory-bound elementwise work: RMSNorm and rotary position
// embedding, forward and backward each in one or two passes instead of the five to eight of the composite
// ATen expressions. They apply to contiguous float32 CPU tensors; anything else (CUDA, bf16 autocast) takes
// the composite path, which is also the reference the tests compare the kernels with.
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

}  // namespace sharelens
