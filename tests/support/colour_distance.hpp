// How far a pixel's colour lies from the colours a closed form allows, for tests that read pixels back.
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <span>

namespace sharelens::testing {

using DoubledRgb = std::array<int, 3>;  // a colour's channels times two: the mean of two colours stays whole

inline DoubledRgb doubled(int r, int g, int b) {
  return {2 * r, 2 * g, 2 * b};
}
inline DoubledRgb meanOf(int r0, int g0, int b0, int r1, int g1, int b1) {
  return {r0 + r1, g0 + g1, b0 + b1};
}

// Twice the largest channel distance from `rgb` to the nearest of `allowed`.
inline int twiceDistanceToNearest(const std::array<int, 3>& rgb, std::span<const DoubledRgb> allowed) {
  int nearest = 1 << 30;
  for (const DoubledRgb& c : allowed) {
    int distance = 0;
    for (size_t ch = 0; ch < 3; ++ch) distance = std::max(distance, std::abs(2 * rgb[ch] - c[ch]));
    nearest = std::min(nearest, distance);
  }
  return nearest;
}

}  // namespace sharelens::testing
