// OpenBLAS keeps one thread pool for the whole process, and LibTorch's CPU matmuls, Eigen's LAPACK calls and
// our analyses all share it. Everything that sizes it goes through here, under one lock (DESIGN.md section
// 2):
//   - a run (training, evaluation, calibration) asks for its thread count: requestBlasThreads(n); the latest
//     request is the process's count;
//   - an analysis that parallelises over matrices holds a SingleThreadedBlas while it does: while any is
//     held the pool stays at one thread, and the requested count comes back when the last one goes.
// So concurrent jobs never save and restore each other's setting. Built as its own small library
// (sharelens_blas) because core does not link BLAS.
#pragma once

namespace sharelens {

void requestBlasThreads(int threads);

class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

// Whether OpenBLAS runs its matmuls on a pthread pool of its own (Debian's libopenblas0-pthread) rather than
// sequentially or on the OpenMP pool that LibTorch's elementwise ops use.
bool blasHasItsOwnThreadPool();

// The count OpenBLAS runs with now (for tests and reports).
int currentBlasThreads();

}  // namespace sharelens
