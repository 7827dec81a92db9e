#include "core/heap.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sharelens {

bool keepLargeBuffersInHeap() {
#if defined(__GLIBC__)
  // Setting M_MMAP_THRESHOLD also stops glibc's dynamic threshold, which would otherwise stay at <= 32 MiB.
  // An older glibc refuses a threshold above 32 MiB; then the trim threshold is left alone too, since setting
  // it would also pin the mmap threshold at its 128 KiB start instead of letting it grow.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapBufferLimit)) != 1) return false;
  return mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapRetainLimit)) == 1;
#else
  return false;
#endif
}

}  // namespace sharelens
