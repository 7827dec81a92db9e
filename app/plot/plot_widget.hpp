// The interactive plot: drawFigure() into an ImGui child area plus zoom (wheel; Ctrl or heatmaps: both
// axes), pan (left drag), box zoom (right drag), reset (double click), hover read-outs, legend toggles and,
// for heatmaps, cell selection by click. The view state lives with the caller so it survives frames and
// exports.
#pragma once

#include <imgui.h>

#include <optional>
#include <utility>

#include "app/plot/figure.hpp"
#include "app/plot/figure_memo.hpp"
#include "app/plot/imgui_canvas.hpp"

namespace sharelens::plot {

struct PlotState {
  std::optional<Range> xView, yView;  // nullopt: fitted
  std::vector<bool> hidden;           // per series, toggled from the legend
  bool boxZooming = false;
  Point boxStart;
  uint64_t shown = 0;  // what the zoom belongs to (title, series, map size): another figure starts fitted
  FigureMemo memo;     // the passes over the figure's points, kept while its data and the view stay
  void reset() { xView.reset(), yView.reset(); }
};

struct PlotEvents {
  std::optional<std::pair<int64_t, int64_t>> clickedCell;  // (row, col) of a heatmap click
  std::optional<std::pair<int64_t, int64_t>> hoveredCell;
  bool hovered = false;
};

PlotEvents plotWidget(const char* id, const Figure& figure, PlotState& state, ImVec2 size,
                      TextureCache& textures, const Style& style);
// The size plotWidget gives a figure at `origin` asked for `size`: ending on whole pixels (the space left may
// end on a half one), so that a figure starting on one, as ImGui lays items out, is its picture's own pixels,
// its background cleared into them rather than drawn (figure_raster.hpp); at least a pixel (ImGui asserts on
// an empty item).
ImVec2 wholePixelSize(ImVec2 origin, ImVec2 size);
// Whether a plot was under the pointer in this ImGui frame (the status line then names the gestures).
bool plotHoveredThisFrame();
inline constexpr const char* kPlotGestures =
    "plot: wheel zooms x (Ctrl: both axes), left drag pans, right drag zooms to a box, double click resets; "
    "click a legend entry to hide its series";

// View-state arithmetic, separate from ImGui so it can be unit-tested.
Range zoomAround(const Range& range, Scale scale, double anchor, double factor);  // factor < 1 zooms in
Range panBy(const Range& range, Scale scale, double unitDelta);  // shift by a fraction of the span

}  // namespace sharelens::plot
