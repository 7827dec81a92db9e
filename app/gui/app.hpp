// The ShareLens window: menu bar, one tab per view, a job bar with progress and cancel buttons, an error
// panel, recent files, drag-and-drop, persistent settings, idle throttling. Also the demo workspace,
// screenshots (--screenshot) and UI-thread frame timing (--frame-stats).
#pragma once

#include <optional>
#include <string>

#include "app/gui/view_id.hpp"

namespace sharelens::gui {

struct GuiOptions {
  std::optional<std::string> path;        // a checkpoint, run directory or topology to open
  bool demo = false;                      // train the default topology and its baseline, follow them
  std::optional<std::string> screenshot;  // write a PNG after `frames` frames (and once jobs are idle)
  int frames = 3;
  int maxWaitSeconds = 120;               // screenshots wait at most this long for jobs
  std::optional<ViewId> view;             // tab to show first
  std::optional<std::string> frameStats;  // write p50/p99 UI-thread frame times (JSON) on exit
  bool benchUi = false;    // a 4096^2 heatmap and 10 x 20k-point curves on screen, a run training
  bool benchLive = false;  // --bench-ui with one of the ten curves gaining a step every 250 ms
  int width = 1600, height = 1000;
  // Show unchanged figures from a picture (plot/figure_raster.hpp); off with --no-figure-cache.
  bool figureCache = true;
  std::optional<std::string> uiState;   // scripted tests: widget positions and view state (app/gui/ui_probe)
  std::optional<int> exitAfterSeconds;  // scripted tests: close the window after this long
  // Scripted tests: with `screenshot`, write it each time the process gets SIGUSR1 (the window visible and
  // running on; the file replaced whole, and the probe's "screenshots" state counts them) instead of once.
  bool screenshotOnSignal = false;
};

int runGui(const GuiOptions& options);

}  // namespace sharelens::gui
