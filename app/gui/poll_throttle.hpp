// Rate-limits work that the UI thread repeats to notice changes on disk (metrics lines, new checkpoints):
// directory listings at frame rate would be file-system I/O 60 times a second for nothing.
#pragma once

#include <chrono>

namespace sharelens::gui {

class PollThrottle {
 public:
  explicit PollThrottle(std::chrono::milliseconds interval = std::chrono::milliseconds(250))
      : m_interval(interval) {}
  // True at most once per interval; the first call after construction or reset() is always due.
  bool due() {
    const auto now = std::chrono::steady_clock::now();
    if (m_armed && now - m_last < m_interval) return false;
    m_armed = true;
    m_last = now;
    return true;
  }
  void reset() { m_armed = false; }

 private:
  std::chrono::milliseconds m_interval;
  std::chrono::steady_clock::time_point m_last{};
  bool m_armed = false;
};

}  // namespace sharelens::gui
