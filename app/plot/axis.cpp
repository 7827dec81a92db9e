#include "app/plot/axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sharelens::plot {

double AxisTransform::toUnit(double v) const {
  if (scale == Scale::Log10) {
    const double lo = std::log10(std::max(range.min, 1e-300)), hi = std::log10(std::max(range.max, 1e-300));
    const double x = std::log10(v > 0 ? v : std::max(range.min, 1e-300));
    return hi > lo ? (x - lo) / (hi - lo) : 0.5;
  }
  return range.span() > 0 ? (v - range.min) / range.span() : 0.5;
}

double AxisTransform::fromUnit(double u) const {
  if (scale == Scale::Log10) {
    const double lo = std::log10(std::max(range.min, 1e-300)), hi = std::log10(std::max(range.max, 1e-300));
    return std::pow(10.0, lo + u * (hi - lo));
  }
  return range.min + u * range.span();
}

double niceStep(double span, int target) {
  if (!(span > 0) || target < 1) return 1.0;
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double residual = raw / magnitude;
  const double nice = residual < 1.5 ? 1.0 : residual < 3.5 ? 2.0 : residual < 7.5 ? 5.0 : 10.0;
  return nice * magnitude;
}

std::string formatTick(double v, double step) {
  char buf[32];
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e5 || a < 1e-2) {
    // Scientific with a trimmed mantissa and exponent: "1.200e-04" -> "1.2e-4", "1.000e-03" -> "1e-3".
    std::snprintf(buf, sizeof buf, "%.3e", v);
    const std::string s = buf;
    const auto e = s.find('e');
    std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
    mantissa.erase(mantissa.find_last_not_of('0') + 1);
    if (mantissa.back() == '.') mantissa.pop_back();
    const bool negative = exponent[0] == '-';
    exponent.erase(0, 1);
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    return mantissa + "e" + (negative ? "-" : "") + exponent;
  }
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<Tick> niceTicks(const AxisTransform& axis, int target, double minStep) {
  std::vector<Tick> ticks;
  const Range r = axis.range;
  if (!r.valid()) return ticks;
  if (axis.scale == Scale::Log10 && r.min > 0) {
    const int lo = static_cast<int>(std::floor(std::log10(r.min))),
              hi = static_cast<int>(std::ceil(std::log10(r.max)));
    // The decades inside the range decide how many are labelled, every `every`-th counted from 10^0 (so 1
    // is labelled where it is inside): three decades on a short axis keep three labels, not the first and
    // the third of four counted from below the range.
    const int insideLo = static_cast<int>(std::ceil(std::log10(r.min) - 1e-12)),
              insideHi = static_cast<int>(std::floor(std::log10(r.max) + 1e-12));
    const int inside = std::max(0, insideHi - insideLo + 1);
    // A decade label is one short word: twice the labels a linear axis of this length takes (at least 3).
    const int decades = std::max(3, 2 * target);
    const int every = std::max(1, (inside + decades - 1) / decades);
    auto counted = [&](int e) { return ((e % every) + every) % every == 0; };
    // A range spanning less than two decades (0.7 to 10.5, with the two decades 1 and 10 inside it): the 2s
    // and 5s are labelled too, so the axis can still be read, and the 3s when it spans one decade at most
    // (0.3 to 3). Labels stay 15% of the axis apart (1 to 2 is 0.3 decades).
    const double span = std::log10(r.max / r.min);
    auto labelled = [&](int m) { return (span < 2 && (m == 2 || m == 5)) || (span <= 1 + 1e-9 && m == 3); };
    // Decades are labelled alike: plainly when all fit in [0.01, 10^4], else all in 1eK form.
    const bool plain = insideLo >= -2 && insideHi <= 4;
    for (int e = lo; e <= hi; ++e) {
      const double decade = std::pow(10.0, e);
      if (decade >= r.min * (1 - 1e-12) && decade <= r.max * (1 + 1e-12) && counted(e))
        ticks.push_back(
            {decade, plain || e == 0 ? formatTick(decade, decade) : "1e" + std::to_string(e), true});
      if (hi - lo <= 3)
        for (int m = 2; m <= 9; ++m) {
          const double v = m * decade;
          if (v >= r.min && v <= r.max) ticks.push_back({v, labelled(m) ? formatTick(v, decade) : "", false});
        }
    }
    if (std::none_of(ticks.begin(), ticks.end(), [](const Tick& t) { return t.major; })) {
      // Less than a decade: fall back to linear ticks inside it.
      AxisTransform linear{Scale::Linear, r};
      return niceTicks(linear, target, minStep);
    }
    return ticks;
  }
  const double step = std::max(niceStep(r.span(), target), minStep);
  // Multiples k * step (not a running sum, which drifts), snapped to 0 near 0.
  for (double k = std::ceil(r.min / step - 1e-9); k * step <= r.max + step * 1e-9; k += 1) {
    const double v = k == 0 ? 0.0 : k * step;
    ticks.push_back({v, formatTick(v, step), true});
  }
  return ticks;
}

Range RangeAccumulator::padded(double pad) const {
  const double lo = m_lo, hi = m_hi;
  if (!(lo <= hi)) return m_scale == Scale::Log10 ? Range{1e-3, 1} : Range{0, 1};
  if (m_scale == Scale::Log10) {
    const double l = std::log10(lo), h = std::log10(hi), p = std::max(h - l, 0.3) * pad;
    return {std::pow(10.0, l - p), std::pow(10.0, h + p)};
  }
  if (hi == lo) return {lo - 0.5 - std::abs(lo) * 0.05, hi + 0.5 + std::abs(hi) * 0.05};
  const double p = (hi - lo) * pad;
  return {lo - p, hi + p};
}

Range dataRange(const std::vector<double>& values, Scale scale, double pad) {
  RangeAccumulator r(scale);
  r.add(values);
  return r.padded(pad);
}

}  // namespace sharelens::plot
