#include "core/blas_threads.hpp"

#include <algorithm>
#include <mutex>

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
int openblas_get_parallel(void);  // 0: sequential build, 1: its own pthread pool, 2: OpenMP
}

namespace sharelens {
namespace {

struct BlasState {
  std::mutex mutex;
  int requested = 0;  // 0: nobody asked yet (OpenBLAS's own default stands)
  int pins = 0;
};

BlasState& state() {
  static BlasState s;
  return s;
}

}  // namespace

void requestBlasThreads(int threads) {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  s.requested = std::max(threads, 1);
  if (s.pins == 0) openblas_set_num_threads(s.requested);
}

SingleThreadedBlas::SingleThreadedBlas() {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.pins++ == 0) {
    if (s.requested == 0) s.requested = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  if (--s.pins == 0) openblas_set_num_threads(s.requested);
}

bool blasHasItsOwnThreadPool() {
  return openblas_get_parallel() == 1;
}

int currentBlasThreads() {
  return openblas_get_num_threads();
}

}  // namespace sharelens
