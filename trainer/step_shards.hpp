// One training step's rows split over a CPU run's threads: data parallelism inside the process. Each thread
// takes a contiguous part of the batch through forward and backward on its own, single-threaded (its GEMMs on
// oneDNN where the build has it, trainer/cpu_gemm.hpp), and the parts' gradients are added in part order, so
// the sum does not depend on which thread finishes first. At the experiments' sizes a run's GEMMs and kernels
// split poorly over threads (their per-op costs do not shrink), while two halves of the batch are two whole
// steps' worth of work: one run of N threads then trains nearly as fast as N runs of one
// (docs/PERFORMANCE.md).
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "trainer/model.hpp"
#include "trainer/tensor_memory.hpp"

namespace sharelens {

// Whether a step of `rows` rows on `device` with `threads` threads is split: a CPU run of two or more threads
// whose LibTorch pool is kept at one beside OpenBLAS's (trainer/torch_compat.hpp; an MKL LibTorch
// parallelises its own ops), not a distributed rank (its gradients are all-reduced as backward produces
// them), with at least one row per thread; not when SHARELENS_SPLIT_STEP=0.
bool stepIsSplitOverThreads(torch::Device device, int threads, int64_t rows, bool distributed);

struct SplitStepLosses {
  double loss = 0.0;     // the mean cross-entropy over all rows
  double penalty = 0.0;  // PostShare's, when asked for
};

// Forward and backward of tokens [rows, T + 1] in `parts` contiguous row ranges on min(threads, parts)
// threads (the calling thread one of them; each thread takes a contiguous run of parts in turn). Sets each
// parameter's gradient to the sum over parts, in part order, of (its rows / rows) times the gradient of its
// mean loss, plus, with `withPenalty`, the PostShare penalty's gradient (computed once, in the first part):
// the gradient of loss + penalty over the whole batch. The parts, and so the numbers, depend on `parts`
// alone; `threads` only on how many run at once (a run keeps its parts when other work takes its threads).
// CPU tensors allocated meanwhile are charged to `memory`. BLAS is single-threaded while the parts run.
SplitStepLosses lossAndGradientsSplitOverThreads(const SharedTransformer& model,
                                                 std::vector<NamedParameter>& params,
                                                 const torch::Tensor& tokens, int parts, int threads,
                                                 bool withPenalty,
                                                 const std::shared_ptr<TensorMemoryAccount>& memory);

}  // namespace sharelens
