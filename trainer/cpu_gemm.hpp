// One row-major float32 GEMM for the trainer's CPU kernels, C = alpha op(A) op(B) + beta C, on whichever
// library is fastest for a single-threaded call of the training step's projection shapes (see
// cpu_linear.hpp). Torch-free.
#pragma once

#include <cstdint>

namespace sharelens {

enum class Op { None, Transpose };

// C [m, n] (leading dimension ldc) = alpha op(A) [m, k] op(B) [k, n] + beta C; A and B as stored have leading
// dimensions lda and ldb (so A is [m, k] when op is None and [k, m] when Transpose).
void sgemm(Op opA, Op opB, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Whether sgemm calls oneDNN from this thread now: built with it, OpenBLAS's pool at one thread and the
// calling thread's OpenMP team (which oneDNN would use) at one, and not switched off by SHARELENS_ONEDNN=0.
// Otherwise OpenBLAS, which brings its own pool.
bool sgemmUsesOneDnn();

}  // namespace sharelens
