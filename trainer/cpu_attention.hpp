// Causal self-attention for the CPU trainer (issue 37): softmax(scale q k^T + causal mask) v, forward and
// backward in one autograd node, on tensors in the token-major layout the projections produce, so no head
// transpose is ever copied. Each (batch, head) pair is GEMM calls straight into OpenBLAS with the mask, the
// scale and the softmax done in place between them; each GEMM is cut into row panels of queries over only the
// keys they see, so the masked triangle is skipped. The pairs are split over the run's threads, each calling
// a single-threaded BLAS.
//
// Why: at the claims experiments' sizes (context 128, head_dim 32) LibTorch 1.13 without MKL computes
// bmm / baddbmm as one addmm per batch entry behind select() and as_strided() (bench_train --profile: 6,914
// selects per step of the 1M model, attention at 28 GFLOP/s against 100 for the projections' GEMMs).
//
// q: [B, T, H, hd], k, v: [B, T, KV, hd], contiguous float32 CPU, H a multiple of KV (query head h reads KV
// head h / (H / KV)). Returns [B, T, H, hd]. The probabilities [B, H, T, T] are kept for the backward pass,
// as the composite formula keeps them.
#pragma once

#include <torch/types.h>

namespace sharelens {

// Whether tokenMajorCausalAttention() takes these tensors (CPU, float32, contiguous, 4-d, consistent shapes).
bool tokenMajorAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

torch::Tensor tokenMajorCausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, double scale);

}  // namespace sharelens
