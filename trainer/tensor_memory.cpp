#include "trainer/tensor_memory.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <sys/resource.h>

#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace sharelens {
namespace {

thread_local std::shared_ptr<TensorMemoryAccount> t_account;

// The charged allocations, by data pointer: their DataPtrs stay what LibTorch's own are (context = data, one
// plain deleter), as raw_allocate / raw_deallocate (oneDNN's memory) and copy-on-write require.
struct Charge {
  std::shared_ptr<TensorMemoryAccount> account;
  int64_t bytes;
};
std::mutex g_chargesMutex;
std::unordered_map<void*, Charge>& charges() {
  static auto* map = new std::unordered_map<void*, Charge>;  // never destroyed: frees may come at exit
  return *map;
}
c10::DeleterFnPtr g_innerDeleter = nullptr;  // set once, before the allocator is installed

// Frees any block of the wrapped allocator, giving a charged one's bytes back to its account first.
void deleteCharged(void* data) {
  if (data) {
    std::shared_ptr<TensorMemoryAccount> account;
    int64_t bytes = 0;
    {
      std::lock_guard lock(g_chargesMutex);
      if (const auto it = charges().find(data); it != charges().end()) {
        account = std::move(it->second.account);
        bytes = it->second.bytes;
        charges().erase(it);
      }
    }
    if (account) account->release(bytes);
  }
  g_innerDeleter(data);
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
  c10::DeleterFnPtr raw_deleter() const { return &deleteCharged; }

 private:
  // The inner allocator's block, handed out with deleteCharged as its deleter (and charged to the thread's
  // account, if it has one).
  static c10::DataPtr charged(c10::DataPtr inner, size_t bytes) {
    void* data = inner.get();
    if (!data) return inner;
    const c10::Device device = inner.device();
    if (const std::shared_ptr<TensorMemoryAccount>& account = t_account) {
      {
        std::lock_guard lock(g_chargesMutex);
        charges().emplace(data, Charge{account, static_cast<int64_t>(bytes)});
      }
      account->charge(static_cast<int64_t>(bytes));  // once recorded: a failed insert charges nothing
    }
    (void)inner.release_context();  // deleteCharged frees it now
    return {data, data, &deleteCharged, device};
  }
  c10::Allocator* m_inner;
};

// Installs the counting allocator above LibTorch's CPU allocator once; whether it is the one in use. Only
// where the wrapped allocator's blocks are plain (freed by one deleter given the data pointer, as the
// default CPU allocator's are) can the wrapper keep LibTorch's own DataPtr shape.
bool installCountingAllocator() {
  static const bool installed = [] {
    c10::Allocator* inner = c10::GetCPUAllocator();
    g_innerDeleter = inner->raw_deleter();
    if (!g_innerDeleter) return false;
    auto* counting = new CountingCpuAllocator(inner);  // never destroyed: LibTorch holds it until exit
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

bool installTensorMemoryCounting() {
  return installCountingAllocator();
}

std::shared_ptr<TensorMemoryAccount> newTensorMemoryAccount() {
  return installCountingAllocator() ? std::make_shared<TensorMemoryAccount>() : nullptr;
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
