#include "app/gui/frame_times.hpp"

#include <algorithm>
#include <cmath>

namespace sharelens::gui {
namespace {

double milliseconds(FrameTimes::Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// p50, p99 and the maximum of `ms` after its first `warmUp` values.
Json percentiles(const std::vector<double>& ms, size_t warmUp) {
  std::vector<double> v(ms.begin() + static_cast<std::ptrdiff_t>(std::min(warmUp, ms.size())), ms.end());
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {
    if (v.empty()) return 0.0;
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(k, 1, v.size()) - 1];
  };
  return {{"p50_ms", rank(0.5)}, {"p99_ms", rank(0.99)}, {"max_ms", v.empty() ? 0.0 : v.back()}};
}

}  // namespace

void FrameTimes::add(const Marks& f) {
  m_build.push_back(milliseconds(f.built - f.start));
  m_submit.push_back(milliseconds(f.submitted - f.built));
  m_present.push_back(milliseconds(f.presented - f.submitted));
  m_pictures.push_back(milliseconds(f.picturesHanded - f.presented));
  m_total.push_back(m_build.back() + m_submit.back() + m_pictures.back());
}

Json FrameTimes::summary(size_t warmUp) const {
  Json j = percentiles(m_total, warmUp);
  j["frames"] = m_total.size() - std::min(warmUp, m_total.size());
  j["build"] = percentiles(m_build, warmUp);
  j["submit"] = percentiles(m_submit, warmUp);
  j["present"] = percentiles(m_present, warmUp);
  j["pictures"] = percentiles(m_pictures, warmUp);
  return j;
}

}  // namespace sharelens::gui
