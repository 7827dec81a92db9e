// keepLargeBuffersInHeap (core/heap.hpp): a large buffer that is freed and allocated again is reused from
// the heap, not mapped afresh and faulted in page by page (docs/DESIGN.md §2, "Large buffers").
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "core/heap.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define SHARELENS_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARELENS_OWN_ALLOCATOR 1
#endif
#endif

namespace sharelens {
namespace {

long minorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Page faults taken by allocating `bytes`, writing every byte and freeing them.
long faultsToFillAndFree(size_t bytes) {
  const long before = minorFaults();
  auto* p = static_cast<unsigned char*>(std::malloc(bytes));
  if (p == nullptr) return -1;
  std::memset(p, 1, bytes);
  asm volatile("" : : "r"(p) : "memory");  // the writes must happen
  std::free(p);
  return minorFaults() - before;
}

TEST(Heap, AFreedLargeBufferIsReusedWithoutFaultingItInAgain) {
#ifdef SHARELENS_OWN_ALLOCATOR
  GTEST_SKIP() << "the sanitizer's allocator replaces glibc's";
#endif
  constexpr size_t kBytes = size_t{64} << 20;  // above glibc's 32 MiB ceiling for heap-served buffers
  const long pages = static_cast<long>(kBytes / static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  // glibc's default: each 64 MiB buffer is a fresh mapping, so every fill faults in every page again.
  const long fresh = faultsToFillAndFree(kBytes);
  if (fresh < pages / 2)  // huge pages (transparent_hugepage=always) or MALLOC_* / GLIBC_TUNABLES settings
    GTEST_SKIP() << "a 64 MiB fill took " << fresh << " page faults, not one per page: nothing to measure";
  EXPECT_GT(faultsToFillAndFree(kBytes), fresh / 2) << "mapped afresh again";

  ASSERT_TRUE(keepLargeBuffersInHeap());
  EXPECT_GT(faultsToFillAndFree(kBytes), fresh / 2);   // the heap grows once ...
  EXPECT_LT(faultsToFillAndFree(kBytes), fresh / 10);  // ... and the freed buffer is reused
  EXPECT_LT(faultsToFillAndFree(kBytes), fresh / 10);
}

}  // namespace
}  // namespace sharelens
