// The few places where LibTorch 1.13 (Debian) and 2.x (e.g. a CUDA build) differ.
#pragma once

#include <torch/types.h>
#include <torch/version.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include <cmath>

extern "C" void openblas_set_num_threads(int);

namespace sharelens {

// Intra-op threads for LibTorch and for the OpenBLAS pool that its CPU matmuls (and Eigen's LAPACK) share.
inline void setComputeThreads(int threads) {
  at::set_num_threads(threads);
  openblas_set_num_threads(threads);
}

// softmax(q k^T / sqrt(hd) + causal mask) v for q, k, v of [B, H, T, hd]. LibTorch 2 has a fused kernel
// (flash / memory-efficient on CUDA); 1.13 gets the explicit formula.
inline torch::Tensor causalAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  const int64_t t = q.size(-2);
  const auto scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  const auto mask = at::ones({t, t}, at::TensorOptions().dtype(at::kBool).device(q.device())).triu(1);
  return at::matmul(at::softmax(scores.masked_fill(mask, -INFINITY), -1), v);
#endif
}

// bf16 autocast on CUDA for the forward pass (matmuls in bf16, reductions in fp32); off on CPU.
class ScopedCudaAutocast {
 public:
  explicit ScopedCudaAutocast(bool enable) : m_enabled(enable) {
    if (!m_enabled) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~ScopedCudaAutocast() {
    if (!m_enabled) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  ScopedCudaAutocast(const ScopedCudaAutocast&) = delete;
  ScopedCudaAutocast& operator=(const ScopedCudaAutocast&) = delete;

 private:
  bool m_enabled;
};

}  // namespace sharelens
