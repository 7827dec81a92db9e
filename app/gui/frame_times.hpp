// The UI thread's time per frame, for the responsiveness benchmark (--bench-ui --frame-stats; issue 14):
// from the frame's start (after waiting for events) to the end of its GL submission, in two parts:
// - build: polling runs and jobs, ImGui and every view's drawing code (this project's code);
// - submit: handing the draw lists to GL (ImGui's OpenGL backend). On a software renderer such as Mesa's
//   llvmpipe this includes the vertex stage, which a GPU's driver would leave to the GPU.
// Presenting the frame (the buffer swap) is kept apart, as `present`, and not counted in the total: with
// vsync it waits for the display. Without vsync on llvmpipe it is where the UI thread waits for the
// renderer's own threads to rasterise the frame, and for the image to be copied to the X server.
#pragma once

#include <chrono>
#include <vector>

#include "core/json_util.hpp"

namespace sharelens::gui {

class FrameTimes {
 public:
  using Clock = std::chrono::steady_clock;
  void add(Clock::time_point start, Clock::time_point built, Clock::time_point submitted,
           Clock::time_point presented);
  // {"frames", "p50_ms", "p99_ms", "max_ms", "build": {p50, p99, max}, "submit": {...}, "present": {...}}
  // over the frames after the first `warmUp` (the font atlas and first textures are made then). A
  // percentile p is the ceil(p n)-th smallest value (nearest rank).
  Json summary(size_t warmUp) const;

 private:
  std::vector<double> m_total, m_build, m_submit, m_present;  // milliseconds, one per frame
};

}  // namespace sharelens::gui
