// What the CPU trainer's own kernels take: trainer/fused_ops, cpu_linear, cpu_attention and the optimizer's
// fused update read and write raw float arrays, so each applies to contiguous float32 CPU tensors only;
// anything else (CUDA, bf16 autocast, a strided view) takes LibTorch's composite path.
#pragma once

#include <torch/types.h>

namespace sharelens {

inline bool isContiguousCpuFloat(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

}  // namespace sharelens
