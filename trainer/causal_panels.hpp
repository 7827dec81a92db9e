// The row panels causal attention's GEMMs are cut into (trainer/cpu_attention.cpp; tests/bench/bench_gemm
// times the same panels). Torch-free.
//
// The causal mask makes query rows [r0, r0 + rows) read only keys [0, r0 + rows): every GEMM of a pair is
// cut into row panels of kPanelRows queries, each over the keys its rows can see, so the masked upper
// triangle is never computed (at T = 128, four panels do 10/16 of the square's work).
#pragma once

#include <algorithm>
#include <cstdint>

namespace sharelens {

inline constexpr int64_t kPanelRows = 32;

// Calls panel(firstRow, rows, seen) for each row panel of a T x T causal matrix; seen = firstRow + rows.
// firstRow stays 64-bit: offsets such as firstRow * T pass 2^31 from T = 46,341.
template <class Panel>
void forEachCausalPanel(int64_t time, const Panel& panel) {
  for (int64_t r0 = 0; r0 < time; r0 += kPanelRows) {
    const int64_t rows = std::min(kPanelRows, time - r0);
    panel(r0, static_cast<int>(rows), static_cast<int>(r0 + rows));
  }
}

}  // namespace sharelens
