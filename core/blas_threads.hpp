// OpenBLAS keeps one thread pool for the whole process, and LibTorch's CPU matmuls, Eigen's LAPACK calls and
// our analyses all share it. Its size is a budget the parts share, decided here under one lock from who
// holds what (DESIGN.md section 2), never by whoever set it last:
//   - a computation (a training run, an evaluation, a calibration) holds a BlasThreadLease of its thread
//     count for as long as it runs. One lease alone: the pool has its count. Two or more at once (a run
//     beside its baseline, an experiment's runs side by side, an evaluation beside a GUI run): each computes
//     on its own thread and the pool has one. None: the pool is back to its count before the first lease;
//   - an analysis that parallelises over matrices holds a SingleThreadedBlas while it does: while any is
//     held the pool stays at one thread.
// So concurrent jobs never save and restore each other's setting, and a run that ends gives its share
// back. Built as its own small library (sharelens_blas) because core does not link BLAS.
#pragma once

namespace sharelens {

class BlasThreadLease {
 public:
  explicit BlasThreadLease(int threads);  // threads < 1 counts as 1
  ~BlasThreadLease();
  BlasThreadLease(const BlasThreadLease&) = delete;
  BlasThreadLease& operator=(const BlasThreadLease&) = delete;

 private:
  int m_threads;
};

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
