// How the process takes memory from the system for large, short-lived buffers.
#pragma once

#include <cstdint>

namespace sharelens {

// Buffers up to kHeapBufferLimit come from the heap and freed ones are kept for reuse (up to
// kHeapRetainLimit at its top), instead of glibc's default of a fresh mmap for anything above 32 MiB and
// an munmap on its free. A model's forward allocates a layer's activations and attention scores (32-128 MiB
// each) anew for every layer and window; with mmap each one is faulted in and zeroed page by page again.
// Measured on the 1B shape over 2,048 tokens: 3.39 M page faults -> 0.28 M, system time 19 -> 7-8.5 s, the
// forward 9% faster, peak resident +80 MiB (docs/DESIGN.md §2). The CLI's commands call it before they
// start (the GUI keeps its own setting, measured for its frames: gui/app.cpp). Returns whether both settings
// took; false, changing nothing, where the allocator is not glibc's or refuses the threshold.
bool keepLargeBuffersInHeap();

inline constexpr int64_t kHeapBufferLimit = int64_t{256} << 20;  // 256 MiB
inline constexpr int64_t kHeapRetainLimit = int64_t{1} << 30;    // 1 GiB

}  // namespace sharelens
