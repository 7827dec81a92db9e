#include "app/plot/plot_widget.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/hash.hpp"

namespace sharelens::plot {
namespace {

int g_hoveredFrame = -1;  // the ImGui frame a plot was last hovered in (UI thread only)

double toSpace(double v, Scale s) {
  return s == Scale::Log10 ? std::log10(std::max(v, 1e-300)) : v;
}
double fromSpace(double v, Scale s) {
  return s == Scale::Log10 ? std::pow(10.0, v) : v;
}

void seriesTooltip(const Figure& f, const PlotState& state, double x) {
  ImGui::BeginTooltip();
  for (size_t i = 0; i < f.series.size(); ++i) {
    if (i < state.hidden.size() && state.hidden[i]) continue;
    const Series& s = f.series[i];
    if (s.x.empty()) continue;
    auto it = std::lower_bound(s.x.begin(), s.x.end(), x);
    size_t k = static_cast<size_t>(
        std::min<std::ptrdiff_t>(it - s.x.begin(), static_cast<std::ptrdiff_t>(s.x.size()) - 1));
    if (k > 0 && std::abs(s.x[k - 1] - x) < std::abs(s.x[k] - x)) --k;
    ImGui::TextColored(ImColor(toImColor(s.color)), "%s", s.label.empty() ? "series" : s.label.c_str());
    ImGui::SameLine();
    ImGui::Text("x = %.6g  y = %.6g", s.x[k], s.y[k]);
  }
  ImGui::EndTooltip();
}

// The label of the shown point nearest the mouse, within 12 pixels (a graph's node or edge end).
void nearestPointTooltip(const Figure& f, const PlotState& state, const FigureLayout& layout, Point mouse) {
  const Series* nearest = nullptr;
  float best = 12.0f * 12.0f;
  for (size_t i = 0; i < f.series.size(); ++i) {
    if (i < state.hidden.size() && state.hidden[i]) continue;
    const Series& s = f.series[i];
    for (size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k) {
      const Point p = layout.toPixel(s.x[k], s.y[k]);
      const float d = (p.x - mouse.x) * (p.x - mouse.x) + (p.y - mouse.y) * (p.y - mouse.y);
      // Markers (nodes) win over the ends of lines at the same place.
      if (d < best || (d == best && s.style == SeriesStyle::Markers)) best = d, nearest = &s;
    }
  }
  if (!nearest || nearest->label.empty()) return;
  ImGui::BeginTooltip();
  ImGui::TextColored(ImColor(toImColor(nearest->color)), "%s", nearest->label.c_str());
  ImGui::EndTooltip();
}

}  // namespace

Range zoomAround(const Range& r, Scale scale, double anchor, double factor) {
  const double lo = toSpace(r.min, scale), hi = toSpace(r.max, scale), a = toSpace(anchor, scale);
  return {fromSpace(a - (a - lo) * factor, scale), fromSpace(a + (hi - a) * factor, scale)};
}

Range panBy(const Range& r, Scale scale, double unitDelta) {
  const double lo = toSpace(r.min, scale), hi = toSpace(r.max, scale), shift = (hi - lo) * unitDelta;
  return {fromSpace(lo + shift, scale), fromSpace(hi + shift, scale)};
}

namespace {

// What a figure shows, not its values: a growing curve keeps its identity, another matrix or layer does not.
uint64_t identityOf(const Figure& f) {
  Fnv1a h;
  auto mix = [&](std::string_view s) { h.update(s.data(), s.size() + 1); };  // with the terminating NUL
  mix(f.title);
  mix(f.subtitle);
  for (const Series& s : f.series) mix(s.label);
  if (f.heatmap)
    h.update(&f.heatmap->rows, sizeof f.heatmap->rows), h.update(&f.heatmap->cols, sizeof f.heatmap->cols);
  return h.value();
}

// Keeps a zoomed view inside the data: shifted back in when panned past an edge, and fitted again (nullopt)
// when zoomed out to the whole range or more.
void clampToData(std::optional<Range>& view, const Range& data, Scale scale) {
  if (!view) return;
  double lo = toSpace(view->min, scale), hi = toSpace(view->max, scale);
  const double dataLo = toSpace(data.min, scale), dataHi = toSpace(data.max, scale);
  if (!(hi - lo < dataHi - dataLo)) {
    view.reset();
    return;
  }
  if (lo < dataLo) hi += dataLo - lo, lo = dataLo;
  if (hi > dataHi) lo -= hi - dataHi, hi = dataHi;
  view = Range{fromSpace(lo, scale), fromSpace(hi, scale)};
}

}  // namespace

ImVec2 wholePixelSize(ImVec2 origin, ImVec2 size) {
  return {std::max(1.0f, std::floor(origin.x + size.x) - origin.x),
          std::max(1.0f, std::floor(origin.y + size.y) - origin.y)};
}

bool plotHoveredThisFrame() {
  return g_hoveredFrame == ImGui::GetFrameCount();
}

PlotEvents plotWidget(const char* id, const Figure& f, PlotState& state, ImVec2 size, TextureCache& textures,
                      const Style& style) {
  PlotEvents events;
  const uint64_t shown = identityOf(f);
  const bool anotherFigure = shown != state.shown;  // drawn at once, not over the last figure's picture
  if (anotherFigure) {                              // fitted, all series on
    state.reset();
    state.hidden.clear();
    state.shown = shown;
  }
  const std::optional<Range> xBefore = state.xView, yBefore = state.yView;
  if (size.x <= 0) size.x = ImGui::GetContentRegionAvail().x;
  if (size.y <= 0) size.y = std::max(200.0f, ImGui::GetContentRegionAvail().y);
  state.hidden.resize(f.series.size(), false);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  size = wholePixelSize(origin, size);
  const ImVec2 end{origin.x + size.x, origin.y + size.y};
  const ImGuiID itemId = ImGui::GetID(id);
  ImGui::InvisibleButton(id, size, ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  // The figure goes into a list of its own, shown from a picture while it stays the same (figure_raster.hpp);
  // the overlays below (box zoom, the hover line) go into the window's list, over it.
  const bool userDriven = hovered || ImGui::IsItemActive() || state.boxZooming || anotherFigure;
  ImDrawList* own = textures.rasters().begin(itemId, origin, end, userDriven);
  ImGuiCanvas canvas(own ? own : list, textures);
  state.memo.bind(f);
  const FigureLayout layout = layoutFigure(f, canvas, style, {origin.x, origin.y}, {size.x, size.y},
                                           state.xView, state.yView, state.hidden, &state.memo);
  list->PushClipRect(origin, end, true);
  drawFigure(canvas, f, layout, style, state.hidden, &state.memo);
  if (own) textures.rasters().finish(list, textures.generation());

  const ImGuiIO& io = ImGui::GetIO();
  const Point mouse{io.MousePos.x, io.MousePos.y};
  const bool inPlot = hovered && mouse.x >= layout.plotMin.x && mouse.x <= layout.plotMax.x &&
                      mouse.y >= layout.plotMin.y && mouse.y <= layout.plotMax.y;
  events.hovered = hovered;
  if (hovered) g_hoveredFrame = ImGui::GetFrameCount();
  const Range x = layout.x.range, y = layout.y.range;
  const Scale xs = layout.x.scale, ys = layout.y.scale;
  if (hovered) {
    for (const FigureLayout::LegendRow& row : layout.legend)  // legend toggles
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && mouse.x >= row.min.x && mouse.x <= row.max.x &&
          mouse.y >= row.min.y && mouse.y <= row.max.y) {
        state.hidden[row.series] = !state.hidden[row.series];
        list->PopClipRect();
        return events;
      }
    if (io.MouseWheel != 0 && inPlot) {
      const double factor = std::pow(0.85, io.MouseWheel);
      state.xView = zoomAround(x, xs, layout.xAt(mouse.x), factor);
      if (io.KeyCtrl || f.heatmap) state.yView = zoomAround(y, ys, layout.yAt(mouse.y), factor);
    }
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) state.reset();
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f) && ImGui::IsItemActive()) {
      const ImVec2 d = io.MouseDelta;
      const float w = layout.plotMax.x - layout.plotMin.x, h = layout.plotMax.y - layout.plotMin.y;
      state.xView = panBy(x, xs, -d.x / w);
      state.yView = panBy(y, ys, (layout.yDown ? -1.0 : 1.0) * d.y / h);
    }
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
      state.boxZooming = true;
      state.boxStart = mouse;
    }
  }
  if (state.boxZooming) {
    list->AddRectFilled({state.boxStart.x, state.boxStart.y}, io.MousePos, IM_COL32(80, 140, 255, 50));
    list->AddRect({state.boxStart.x, state.boxStart.y}, io.MousePos, IM_COL32(80, 140, 255, 200));
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Right)) {
      state.boxZooming = false;
      if (std::abs(mouse.x - state.boxStart.x) > 4 && std::abs(mouse.y - state.boxStart.y) > 4) {
        const double x0 = layout.xAt(state.boxStart.x), x1 = layout.xAt(mouse.x);
        const double y0 = layout.yAt(state.boxStart.y), y1 = layout.yAt(mouse.y);
        state.xView = Range{std::min(x0, x1), std::max(x0, x1)};
        state.yView = Range{std::min(y0, y1), std::max(y0, y1)};
      }
    }
  }
  auto same = [](const std::optional<Range>& a, const std::optional<Range>& b) {
    return a.has_value() == b.has_value() && (!a || (a->min == b->min && a->max == b->max));
  };
  if (!same(state.xView, xBefore) || !same(state.yView, yBefore)) {  // moved this frame: kept on the data
    clampToData(state.xView, state.memo.fittedX(f, state.hidden), layout.x.scale);
    clampToData(state.yView, state.memo.fittedY(f, state.hidden, std::nullopt), layout.y.scale);
  }
  if (inPlot && !state.boxZooming) {
    if (f.heatmap) {
      const int64_t col = static_cast<int64_t>(std::lround(layout.xAt(mouse.x)));
      const int64_t row = static_cast<int64_t>(std::lround(layout.yAt(mouse.y)));
      if (row >= 0 && col >= 0 && row < f.heatmap->rows && col < f.heatmap->cols) {
        events.hoveredCell = {row, col};
        const Heatmap& h = *f.heatmap;
        ImGui::BeginTooltip();
        const std::string rowName =
            h.rowLabels.empty() ? std::to_string(row) : h.rowLabels[static_cast<size_t>(row)];
        const std::string colName =
            h.colLabels.empty() ? std::to_string(col) : h.colLabels[static_cast<size_t>(col)];
        ImGui::Text("%s  x  %s", rowName.c_str(), colName.c_str());
        const std::string quantity = h.colorbarLabel.empty() ? "value" : h.colorbarLabel;
        const float v = h.at(row, col);
        if (std::isnan(v))
          ImGui::TextDisabled("%s: %s", quantity.c_str(), h.missingMeaning.c_str());
        else if (const long i = std::lround(v);
                 !h.categories.empty() && i >= 0 && i < static_cast<long>(h.categories.size()))
          ImGui::Text("%s: %s", quantity.c_str(), h.categories[static_cast<size_t>(i)].c_str());
        else
          ImGui::Text("%s: %.6g", quantity.c_str(), h.at(row, col));
        ImGui::EndTooltip();
        if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) && io.MouseDragMaxDistanceSqr[0] < 16)
          events.clickedCell = {row, col};
      }
    } else if (!f.series.empty() && f.hoverNearestOnly) {
      nearestPointTooltip(f, state, layout, {mouse.x, mouse.y});
    } else if (!f.series.empty()) {
      list->AddLine({mouse.x, layout.plotMin.y}, {mouse.x, layout.plotMax.y}, IM_COL32(128, 128, 128, 120));
      seriesTooltip(f, state, layout.xAt(mouse.x));
    }
  }
  list->PopClipRect();
  return events;
}

}  // namespace sharelens::plot
