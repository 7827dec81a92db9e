// parallelFor: body(i) for i in [0, n) on the task's threads, dynamically scheduled (items differ in cost),
// stopping at the next item once the task is cancelled. The first exception is rethrown on the caller.
#pragma once

#include <cstddef>
#include <functional>

#include "core/task.hpp"

namespace sharelens {

void parallelFor(size_t n, const TaskContext& ctx, const std::function<void(size_t)>& body);

// Single-threaded BLAS inside a scope (we parallelise over matrices instead); restores the old setting.
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
