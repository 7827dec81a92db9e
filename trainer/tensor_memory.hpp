// How much CPU tensor memory each training run holds: LibTorch's CPU allocator is wrapped (once per process,
// when the first account is made) so that each allocation is charged to the account its thread has set
// (ChargeTensorMemoryTo) and given back to that account when freed, on whichever thread. Two runs training
// side by side in one process (an experiment's arms, `train --compare`) so each get their own numbers:
// weights, gradients, optimizer moments and the activations of a step, at their peak. Memory that is not a
// tensor's (the tokenised corpus, BLAS buffers, the allocator's own slack) is not counted; the process's peak
// resident set (processPeakResidentBytes) is.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace sharelens {

class TensorMemoryAccount {
 public:
  int64_t liveBytes() const { return m_live.load(std::memory_order_relaxed); }
  int64_t peakBytes() const { return m_peak.load(std::memory_order_relaxed); }
  void charge(int64_t bytes);
  void release(int64_t bytes) { m_live.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> m_live{0}, m_peak{0};
};

// Puts the counting allocator in front of LibTorch's CPU allocator, once; whether it is in use (not when
// another allocator with a higher priority is set, or one whose blocks need more than one deleter). LibTorch
// reads the allocator without a lock: a program calls this at start, before it has threads (app/main.cpp);
// newTensorMemoryAccount() calls it too, for programs that did not.
bool installTensorMemoryCounting();

// A new account. Returns nullptr when the counting allocator is not in use: then nothing is counted and
// callers report no number.
std::shared_ptr<TensorMemoryAccount> newTensorMemoryAccount();

// While it lives, the CPU tensors this thread allocates are charged to `account` (nullptr: to none).
class ChargeTensorMemoryTo {
 public:
  explicit ChargeTensorMemoryTo(std::shared_ptr<TensorMemoryAccount> account);
  ~ChargeTensorMemoryTo();
  ChargeTensorMemoryTo(const ChargeTensorMemoryTo&) = delete;
  ChargeTensorMemoryTo& operator=(const ChargeTensorMemoryTo&) = delete;

 private:
  std::shared_ptr<TensorMemoryAccount> m_previous;
};

// The process's peak resident set size so far (getrusage), in bytes.
int64_t processPeakResidentBytes();

}  // namespace sharelens
