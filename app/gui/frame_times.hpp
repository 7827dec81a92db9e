// The UI thread's time per frame, for the responsiveness benchmark (--bench-ui --frame-stats; issue 14):
// from the frame's start (after waiting for events) to the pictures handed to the worker, in three counted
// parts and one that is kept apart:
// - build: polling runs and jobs, ImGui and every view's drawing code (this project's code);
// - submit: handing the draw lists to GL (ImGui's OpenGL backend). On a software renderer such as Mesa's
//   llvmpipe this includes the vertex stage, which a GPU's driver would leave to the GPU;
// - present, not counted in the total: the buffer swap. With vsync it waits for the display. Without vsync
//   on llvmpipe it is where the UI thread waits for the renderer's own threads to rasterise the frame, and
//   for the image to be copied to the X server;
// - pictures: handing the figures' pictures that are due to the picture worker
//   (FigureRasters::renderPictures), after the swap. The worker renders them on its own thread and GL
//   context (figure_raster.hpp), beside the UI thread, which no longer waits for their rasterisation.
#pragma once

#include <chrono>
#include <vector>

#include "core/json_util.hpp"

namespace sharelens::gui {

class FrameTimes {
 public:
  using Clock = std::chrono::steady_clock;
  // When each part of a frame ended, in the frame's order.
  struct Marks {
    Clock::time_point start, built, submitted, presented, picturesHanded;
  };
  void add(const Marks& frame);
  // {"frames", "p50_ms", "p99_ms", "max_ms", "build": {p50, p99, max}, "submit": {...}, "present": {...},
  //  "pictures": {...}}: the total is build + submit + pictures
  // over the frames after the first `warmUp` (the font atlas and first textures are made then). A
  // percentile p is the ceil(p n)-th smallest value (nearest rank).
  Json summary(size_t warmUp) const;

 private:
  std::vector<double> m_total, m_build, m_submit, m_present, m_pictures;  // milliseconds, one per frame
};

}  // namespace sharelens::gui
