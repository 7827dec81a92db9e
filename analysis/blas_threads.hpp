// Single-threaded BLAS inside a scope (the analyses parallelise over matrices instead); restores the old
// setting. OpenBLAS's pool is process-wide: torch's BLAS calls share it.
#pragma once

namespace sharelens {

class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads);
  ~ScopedBlasThreads();
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int m_previous;
};

}  // namespace sharelens
