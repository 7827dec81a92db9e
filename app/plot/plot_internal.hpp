// What the plot module's drawing, legend and trace code share (not part of the figure API).
#pragma once

#include <cstddef>
#include <vector>

#include "app/plot/figure.hpp"

namespace sharelens::plot::detail {

inline constexpr float kPad = 8.0f, kTickLength = 4.0f, kColorbarWidth = 14.0f;  // pixels (exports: points)

inline bool isHidden(const std::vector<bool>& hidden, size_t i) {
  return i < hidden.size() && hidden[i];
}

inline bool drawsLine(const Series& s) {
  return s.style == SeriesStyle::Line || s.style == SeriesStyle::LineAndMarkers;
}

}  // namespace sharelens::plot::detail
