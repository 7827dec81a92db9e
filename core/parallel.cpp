#include "core/parallel.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sharelens {

void parallelFor(size_t n, const TaskContext& ctx, const std::function<void(size_t)>& body) {
  const size_t workers = std::min(static_cast<size_t>(ctx.threadCount()), n);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto work = [&] {
    for (;;) {
      if (ctx.stop.stop_requested()) return;
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(failureMutex);
        if (!failure) failure = std::current_exception();
        next.store(n);  // let the others stop
        return;
      }
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> threads;
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    work();
  }
  if (failure) std::rethrow_exception(failure);
  ctx.throwIfCancelled();
}

}  // namespace sharelens
