#include "trainer/tensor_memory.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <sys/resource.h>

#include <cstring>
#include <utility>

namespace sharelens {
namespace {

thread_local std::shared_ptr<TensorMemoryAccount> t_account;

// An allocation charged to an account: the real one inside, freed with it.
struct Charged {
  c10::DataPtr inner;
  std::shared_ptr<TensorMemoryAccount> account;
  int64_t bytes;
};

void releaseCharged(void* context) {
  auto* charged = static_cast<Charged*>(context);
  charged->account->release(charged->bytes);
  delete charged;  // frees the memory through the wrapped allocator's own deleter
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner) : m_inner(inner) {}

  // LibTorch 1.13 declares allocate() const; 2.x (2.3 on) non-const, with a pure copy_data(). Both forms are
  // defined, and none is marked `override` (clang asks for all or none): each overrides the base's where
  // its signature is the base's.
  c10::DataPtr allocate(size_t bytes) const { return charged(m_inner->allocate(bytes), bytes); }
  c10::DataPtr allocate(size_t bytes) { return charged(m_inner->allocate(bytes), bytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const { return nullptr; }  // contexts differ from the data

 private:
  static c10::DataPtr charged(c10::DataPtr inner, size_t bytes) {
    if (!t_account || !inner.get()) return inner;
    void* data = inner.get();
    const c10::Device device = inner.device();
    t_account->charge(static_cast<int64_t>(bytes));
    auto* context = new Charged{std::move(inner), t_account, static_cast<int64_t>(bytes)};
    return {data, context, &releaseCharged, device};
  }
  c10::Allocator* m_inner;
};

// Installs the counting allocator above LibTorch's CPU allocator once; whether it is the one in use.
bool countingAllocatorInstalled() {
  static const bool installed = [] {
    // Never destroyed: LibTorch holds the pointer until the process ends.
    auto* counting = new CountingCpuAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(counting, /*priority=*/1);
    return c10::GetCPUAllocator() == counting;
  }();
  return installed;
}

}  // namespace

void TensorMemoryAccount::charge(int64_t bytes) {
  const int64_t live = m_live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = m_peak.load(std::memory_order_relaxed);
  while (live > peak && !m_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

std::shared_ptr<TensorMemoryAccount> newTensorMemoryAccount() {
  return countingAllocatorInstalled() ? std::make_shared<TensorMemoryAccount>() : nullptr;
}

ChargeTensorMemoryTo::ChargeTensorMemoryTo(std::shared_ptr<TensorMemoryAccount> account)
    : m_previous(std::exchange(t_account, std::move(account))) {}

ChargeTensorMemoryTo::~ChargeTensorMemoryTo() {
  t_account = std::move(m_previous);
}

int64_t processPeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

}  // namespace sharelens
