// Splitting a training step's own CPU loops (attention, the fused elementwise ops) over the threads the run
// was given. A run's threads are its OpenBLAS threads (core/blas_threads); LibTorch's intra-op pool is kept
// at one beside them (trainer/torch_compat.hpp), so ATen's parallel_for would run these loops on one core.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "core/blas_threads.hpp"

namespace sharelens {

// Runs work(begin, end) over [0, n) split into contiguous ranges, one per thread of `threads` (a run's loops
// pass currentBlasThreads(), the threads the run asked OpenBLAS for), but no range shorter than minPerPart
// (small loops stay on the calling thread: starting a thread costs tens of microseconds). A sum over the
// range should be made of fixed blocks added in order, so that it does not depend on the thread count. An
// exception in any part is rethrown on the calling thread once every part has ended.
template <class Work>
void splitOverThreads(int threads, int64_t n, int64_t minPerPart, const Work& work) {
  const int64_t byWork = std::max<int64_t>(1, n / std::max<int64_t>(1, minPerPart));
  const int parts = static_cast<int>(std::clamp<int64_t>(byWork, 1, std::max(1, threads)));
  if (parts == 1) {
    work(int64_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> failures(static_cast<size_t>(parts));
  auto range = [&](int part) {
    try {
      work(n * part / parts, n * (part + 1) / parts);
    } catch (...) {
      failures[static_cast<size_t>(part)] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> helpers;  // joined when this scope ends, also if starting one throws
    for (int part = 1; part < parts; ++part) helpers.emplace_back(range, part);
    range(0);
  }
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace sharelens
