// Axes for the plot widgets and figure export: linear and log10 transforms, "nice" 1-2-5 ticks, decade
// ticks for logs, and compact tick labels. Pure functions, unit-tested without a window.
#pragma once

#include <span>

#include <cmath>

#include <algorithm>

#include <string>
#include <vector>

namespace sharelens::plot {

enum class Scale { Linear, Log10 };

struct Range {
  double min = 0, max = 1;
  double span() const { return max - min; }
  bool valid() const { return max > min; }
};

// Maps data values to [0, 1] along an axis (log10 for Scale::Log10; values <= 0 clamp to the range's min).
struct AxisTransform {
  Scale scale = Scale::Linear;
  Range range;
  double toUnit(double value) const;
  double fromUnit(double unit) const;
};

struct Tick {
  double value;
  std::string label;
  bool major = true;
};

// About `target` major ticks at 1, 2 or 5 x 10^k steps of at least minStep (linear; minStep 1 keeps an
// integer axis on whole numbers), or at decades with 2..9 minors (log; all decades labelled alike).
std::vector<Tick> niceTicks(const AxisTransform& axis, int target = 6, double minStep = 0.0);

// The 1-2-5 step nearest to span / target.
double niceStep(double span, int target);

// 0.00012 -> "1.2e-4", 1500 -> "1500", 2.5 -> "2.5"
std::string formatTick(double value, double step);

// The extent of values seen so far, without keeping them (a figure's 200,000 points are fitted every frame).
class RangeAccumulator {
 public:
  explicit RangeAccumulator(Scale scale = Scale::Linear) : m_scale(scale) {}
  void add(double v) {  // non-finite values, and non-positive ones on a log axis, are ignored
    if (!std::isfinite(v) || (m_scale == Scale::Log10 && v <= 0)) return;
    m_lo = std::min(m_lo, v);
    m_hi = std::max(m_hi, v);
  }
  void add(std::span<const double> values) {
    for (double v : values) add(v);
  }
  void add(const RangeAccumulator& other) {  // the values `other` saw (on the same scale)
    m_lo = std::min(m_lo, other.m_lo);
    m_hi = std::max(m_hi, other.m_hi);
  }
  Range padded(double pad) const;  // the extent padded by `pad` of it (in decades on a log axis)
  bool empty() const { return !(m_lo <= m_hi); }

 private:
  Scale m_scale;
  double m_lo = INFINITY, m_hi = -INFINITY;
};

// A range that covers `values` (ignoring non-finite and, for logs, non-positive ones), padded by `pad`.
Range dataRange(const std::vector<double>& values, Scale scale, double pad = 0.05);

}  // namespace sharelens::plot
