// The few places where LibTorch 1.13 (Debian) and 2.x (e.g. a CUDA build) differ.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/types.h>
#include <torch/version.h>

#include <cmath>

#include "core/blas_threads.hpp"

namespace sharelens {

// LibTorch's own intra-op threads when its matmuls get `threads` BLAS threads. Debian's LibTorch has no MKL:
// its CPU matmuls call OpenBLAS, whose pthread pool is not LibTorch's OpenMP pool. With both pools at
// `threads`, OpenMP's idle workers spin (libgomp's default wait policy) through every matmul while OpenBLAS's
// workers compute, so twice as many threads as cores compete. bench_train on 2 cores, alternated in one
// session: 913-1017 tokens/s so, 1314-1443 with LibTorch's pool at one thread, 1224-1440 with
// OMP_WAIT_POLICY=PASSIVE (which libgomp reads only at start-up, so it cannot be set from here). So where the
// matmuls run on OpenBLAS's own pool, LibTorch's elementwise ops run on the calling thread between them;
// where LibTorch brings MKL (its pip builds), MKL uses the OpenMP pool itself and both get `threads`.
inline int torchIntraOpThreads(int threads) {
  return !at::hasMKL() && blasHasItsOwnThreadPool() ? 1 : threads;
}

// Threads for a computation (a run, an evaluation), held for as long as it lasts: its lease on OpenBLAS's
// pool (shared with Eigen's LAPACK and the analyses; see core/blas_threads.hpp for how concurrent leases
// share it) and LibTorch's intra-op count. LibTorch's count is process-wide and set by the newest holder;
// where it matters (MKL builds) runs side by side ask for the same count.
class ComputeThreads {
 public:
  explicit ComputeThreads(int threads) : m_blas(threads) {
    at::set_num_threads(torchIntraOpThreads(threads));
  }

 private:
  BlasThreadLease m_blas;
};

// Causal self-attention with grouped KV heads: softmax(scale q k^T + mask) v, the mask -inf above the
// diagonal and, with a sliding window w > 0, where i - j >= w (query i sees keys i - w + 1 .. i).
// q: [B, H, T, hd]; k, v: [B, KV, T, hd], H a multiple of KV (query head h reads KV head h / (H / KV)).
// Returns [B, H, T, hd]. LibTorch 2 has a fused kernel (flash / memory-efficient on CUDA). For 1.13 the
// explicit formula is arranged so that each KV head's query group is one GEMM (no repeated K/V copies), and
// the scale and the mask ride inside that GEMM: no pass over the [T, T] scores but the softmax's.
struct AttentionMask {
  double scale = 0.0;         // 0: 1 / sqrt(hd)
  int64_t slidingWindow = 0;  // 0: none

  double scaleFor(int64_t hd) const { return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(hd)); }
  // [T, T] bool, true where query i does not see key j.
  torch::Tensor hiddenKeys(int64_t t, torch::Device device) const {
    const auto positions = at::TensorOptions().dtype(at::kLong).device(device);
    const torch::Tensor i = at::arange(t, positions).unsqueeze(1), j = at::arange(t, positions).unsqueeze(0);
    const torch::Tensor future = j > i;
    return slidingWindow > 0 ? future.logical_or((i - j) >= slidingWindow) : future;
  }
};

inline torch::Tensor causalAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     AttentionMask mask = {}) {
  const int64_t t = q.size(2), hd = q.size(3), group = q.size(1) / k.size(1);
  const double scale = mask.scaleFor(hd);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  const auto expand = [&](const torch::Tensor& x) { return group > 1 ? x.repeat_interleave(group, 1) : x; };
  if (mask.slidingWindow > 0)
    return at::scaled_dot_product_attention(q, expand(k), expand(v),
                                            mask.hiddenKeys(t, q.device()).logical_not(), 0.0, false, scale);
  return at::scaled_dot_product_attention(q, expand(k), expand(v), {}, 0.0, /*is_causal=*/true, scale);
#else
  const int64_t b = q.size(0), h = q.size(1), kv = k.size(1);
  const auto grouped = q.reshape({b * kv, group * t, hd});  // query rows of one KV head's group, stacked
  // 0 where a query sees a key, -inf elsewhere, for each of the group's T x T blocks: added inside the GEMM
  // (beta = 1) together with the scale (alpha).
  const auto bias = at::zeros({t, t}, q.options())
                        .masked_fill_(mask.hiddenKeys(t, q.device()), -INFINITY)
                        .repeat({group, 1});
  const torch::Tensor scores =
      at::baddbmm(bias.unsqueeze(0), grouped, k.reshape({b * kv, t, hd}).transpose(1, 2),
                  /*beta=*/1.0, /*alpha=*/scale);
  return at::bmm(at::softmax(scores, -1), v.reshape({b * kv, t, hd})).view({b, h, t, hd});
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
