#include "core/blas_threads.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
int openblas_get_parallel(void);  // 0: sequential build, 1: its own pthread pool, 2: OpenMP
}

namespace sharelens {
namespace {

struct BlasState {
  std::mutex mutex;
  int before = 0;           // the pool's count before anything here changed it (0: not read yet)
  std::vector<int> leases;  // the thread counts of the leases held now
  int pins = 0;             // SingleThreadedBlas held now
  int applied = 0;          // what the pool was last set to

  // Under the mutex, after every change.
  void apply() {
    if (before == 0) before = openblas_get_num_threads();
    const int target = pins > 0 || leases.size() > 1 ? 1 : leases.size() == 1 ? leases.front() : before;
    if (target != applied) openblas_set_num_threads(target);
    applied = target;
  }
};

BlasState& state() {
  static BlasState s;
  return s;
}

}  // namespace

BlasThreadLease::BlasThreadLease(int threads) : m_threads(std::max(threads, 1)) {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  s.leases.push_back(m_threads);
  s.apply();
}

BlasThreadLease::~BlasThreadLease() {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  s.leases.erase(std::find(s.leases.begin(), s.leases.end(), m_threads));
  s.apply();
}

SingleThreadedBlas::SingleThreadedBlas() {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  ++s.pins;
  s.apply();
}

SingleThreadedBlas::~SingleThreadedBlas() {
  BlasState& s = state();
  std::lock_guard lock(s.mutex);
  --s.pins;
  s.apply();
}

bool blasHasItsOwnThreadPool() {
  return openblas_get_parallel() == 1;
}

int currentBlasThreads() {
  return openblas_get_num_threads();
}

}  // namespace sharelens
