// The training model's projections on the CPU: y = x W^T as one autograd node whose three GEMMs (forward,
// input gradient, weight gradient) go to oneDNN's sgemm where the build has it and the run holds one thread,
// to OpenBLAS otherwise. On the claims experiments' shapes (2,048 tokens x d 128, N 128 to 1,024) oneDNN's
// AVX-512 sgemm ran 108 GFLOP/s against OpenBLAS 0.3.21's 95 on one core (docs/PERFORMANCE.md). Other
// devices, dtypes and layouts take at::linear, which is also the tests' reference.
#pragma once

#include <torch/types.h>

namespace sharelens {

// x: [..., K], weight: [N, K] -> [..., N]; no bias.
torch::Tensor projection(const torch::Tensor& x, const torch::Tensor& weight);

// Whether projection() on a float32 CPU input calls oneDNN now (built with it, and the calling thread's BLAS
// and OpenMP teams are one thread each), for benchmarks and tests to say which GEMM they measured.
bool projectionUsesOneDnn();

}  // namespace sharelens
