// Splitting a training step's own CPU loops (attention, the fused elementwise ops) over the threads the run
// was given. A run's threads are its OpenBLAS threads (core/blas_threads); LibTorch's intra-op pool is kept
// at one beside them (trainer/torch_compat.hpp), so ATen's parallel_for would run these loops on one core.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/blas_threads.hpp"

namespace sharelens {

// Runs work(begin, end) over [0, n) split into contiguous ranges, one per thread of `threads` (a run's loops
// pass currentBlasThreads(), the threads the run asked OpenBLAS for), but no range shorter than minPerPart (small loops stay on the calling thread: starting a thread costs tens
// of microseconds). work may take a third argument, its part's index (0 <= part < threads), for sums that are
// to be added in a fixed order. An exception in any part is rethrown on the calling thread once every part
// has ended.
template <class Work>
void splitOverThreads(int threads, int64_t n, int64_t minPerPart, const Work& work) {
  const int64_t byWork = std::max<int64_t>(1, n / std::max<int64_t>(1, minPerPart));
  const int parts = static_cast<int>(std::clamp<int64_t>(byWork, 1, std::max(1, threads)));
  auto run = [&](int64_t begin, int64_t end, int part) {
    if constexpr (std::is_invocable_v<const Work&, int64_t, int64_t, int>)
      work(begin, end, part);
    else
      work(begin, end);
  };
  if (parts == 1) {
    run(0, n, 0);
    return;
  }
  std::vector<std::exception_ptr> failures(static_cast<size_t>(parts));
  auto range = [&](int part) {
    try {
      run(n * part / parts, n * (part + 1) / parts, part);
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
