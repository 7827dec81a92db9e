#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <type_traits>
#include <utility>

#include "app/plot/figure.hpp"
#include "app/plot/figure_memo.hpp"
#include "app/plot/legend_layout.hpp"
#include "app/plot/plot_internal.hpp"
#include "core/hash.hpp"

namespace sharelens::plot {

using namespace detail;

namespace {

// How many major ticks an axis of this many pixels gets: labels about 4 (y) or 7 (x) text heights apart.
int yTickTarget(float pixels, float text) {
  return std::clamp(static_cast<int>(pixels / (text * 4)), 2, 10);
}
int xTickTarget(float pixels, float text) {
  return std::clamp(static_cast<int>(pixels / (text * 7)), 2, 12);
}

// Where a text reaching `half` either side of its centre is centred: at `centre`, moved inside [lo, hi] (the
// figure's edges, or its margins) where it would cross one; one wider than [lo, hi] starts at lo.
template <class T>
T centredWithin(T centre, T half, T lo, T hi) {
  return std::clamp(centre, lo + half, std::max(lo + half, hi - half));
}

Range heatmapRange(int64_t n) {
  return {-0.5, static_cast<double>(n) - 0.5};
}

// Index ticks for a heatmap axis: labels when they fit, else 1-2-5 steps of whole indices.
// Ticks of a heatmap axis. Named cells are labelled by name, every k-th one when a label needs more room
// along the axis (`labelExtent`: its width on x, the font's height on y) than a cell has, so that labels
// never overlap; unnamed cells get numbered nice ticks.
std::vector<Tick> indexTicks(int64_t n, const std::vector<std::string>& labels, const Range& view,
                             float pixels, float fontSize, float labelExtent) {
  std::vector<Tick> ticks;
  const double visible = view.span();
  if (!labels.empty() && static_cast<int64_t>(labels.size()) == n) {
    const double perCell = pixels / std::max(1e-9, visible);
    const int64_t every = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil((labelExtent + 0.4 * fontSize) / std::max(1e-9, perCell))));
    for (int64_t i = 0; i < n; i += every)
      if (i >= view.min - 0.5 && i <= view.max + 0.5)
        ticks.push_back({static_cast<double>(i), labels[static_cast<size_t>(i)], true});
    return ticks;
  }
  const double step =
      std::max(1.0, niceStep(visible, std::max(2, static_cast<int>(pixels / (fontSize * 4)))));
  for (double v = std::ceil(std::max(0.0, view.min) / step) * step;
       v <= std::min<double>(static_cast<double>(n - 1), view.max); v += step)
    ticks.push_back({v, formatTick(v, 1.0), true});
  return ticks;
}

// Ticks at the category positions inside the view, labelled by name, left to right, each kept when its
// label clears the last kept one by half a font size: labels of different lengths are measured as they are
// (a topology graph's short "layers" between two long names stays, where a stride set by the widest name
// dropped it), and none overlap. Positions are pixels from the plot's left edge; a label is placed as the
// drawing places it, pulled inside the figure [figureLeft, figureRight] at its edges.
std::vector<Tick> categoryTicks(const std::vector<std::string>& names, const Range& view, float pixels,
                                Canvas& canvas, float fontSize, float figureLeft, float figureRight) {
  const double perCategory = pixels / std::max(1e-9, view.span());
  std::vector<Tick> ticks;
  double lastRight = -HUGE_VAL;
  for (size_t i = 0; i < names.size(); ++i) {
    const double at = static_cast<double>(i);
    if (at < view.min || at > view.max) continue;
    const double half = canvas.textSize(names[i], fontSize).x / 2.0;
    const double centre = centredWithin<double>((at - view.min) * perCategory, half, figureLeft, figureRight);
    if (centre - half < lastRight + fontSize / 2.0) continue;
    ticks.push_back({at, names[i], true});
    lastRight = centre + half;
  }
  return ticks;
}

// A bar from the bottom of the plot to its value, hatched with diagonal lines when asked, and its error bar.
void drawBar(Canvas& c, const FigureLayout& l, const Series& s, size_t k, const Style& style) {
  const double half = s.barWidth / 2;
  const Point top = l.toPixel(s.x[k] - half, s.y[k]), bottom = l.toPixel(s.x[k] + half, l.y.range.min);
  const Point min{top.x, std::min(top.y, bottom.y)}, max{bottom.x, std::max(top.y, bottom.y)};
  if (s.hatched) {
    c.fillRect(min, max, s.color, 0.18f);
    c.pushClip(min, max);
    const float h = max.y - min.y;
    for (float x0 = min.x - h; x0 < max.x; x0 += 7.0f) c.line({x0, max.y}, {x0 + h, min.y}, s.color, 1.2f);
    c.popClip();
    c.rect(min, max, s.color, 1.2f);
  } else {
    c.fillRect(min, max, s.color, 0.9f);
  }
  if (k < s.error.size() && std::isfinite(s.error[k]) && s.error[k] > 0) {
    const float cx = (min.x + max.x) / 2, cap = std::max(3.0f, (max.x - min.x) / 6);
    const float lo = l.toPixel(s.x[k], s.y[k] - s.error[k]).y, hi = l.toPixel(s.x[k], s.y[k] + s.error[k]).y;
    c.line({cx, lo}, {cx, hi}, style.foreground, 1.3f);
    c.line({cx - cap, lo}, {cx + cap, lo}, style.foreground, 1.3f);
    c.line({cx - cap, hi}, {cx + cap, hi}, style.foreground, 1.3f);
  }
}

// The band [low, high] along a series, as one convex quad per segment (a band is rarely convex as a whole).
// On a log axis a low edge at or below zero (a mean over two seeds: t = 12.7) is drawn at the axis' bottom
// (AxisTransform::toUnit pins values <= 0 there).
void drawBand(Canvas& c, const FigureLayout& l, const Series& s) {
  const size_t n = std::min({s.x.size(), s.bandLow.size(), s.bandHigh.size()});
  for (size_t k = 0; k + 1 < n; ++k) {
    if (!std::isfinite(s.bandLow[k]) || !std::isfinite(s.bandHigh[k]) || !std::isfinite(s.bandLow[k + 1]) ||
        !std::isfinite(s.bandHigh[k + 1]))
      continue;
    c.fillQuad(l.toPixel(s.x[k], s.bandLow[k]), l.toPixel(s.x[k + 1], s.bandLow[k + 1]),
               l.toPixel(s.x[k + 1], s.bandHigh[k + 1]), l.toPixel(s.x[k], s.bandHigh[k]), s.color, 0.18f);
  }
}

}  // namespace

Rgb categoryColor(int64_t index, int64_t count, Colormap spread) {
  if (index < 0 || index >= count) return colormapColor(spread, NAN);
  return count <= kSeriesColors
             ? seriesColor(static_cast<int>(index))
             : colormapColor(spread, static_cast<double>(index) / static_cast<double>(count - 1));
}

Rgb heatmapCellColor(const Heatmap& h, float value) {
  if (std::isnan(value)) return colormapColor(h.colormap, NAN);
  if (!h.categories.empty())
    return categoryColor(std::lround(value), static_cast<int64_t>(h.categories.size()), h.colormap);
  const double span = h.vmax > h.vmin ? h.vmax - h.vmin : 1.0;
  return colormapColor(h.colormap, (value - h.vmin) / span);
}

Style Style::light() {
  return Style{};
}

Style Style::dark() {
  Style s;
  s.background = {28, 28, 32};
  s.foreground = {225, 225, 225};
  s.grid = {55, 55, 62};
  s.frame = {110, 110, 118};
  return s;
}

Point FigureLayout::toPixel(double xv, double yv) const {
  const float w = plotMax.x - plotMin.x, h = plotMax.y - plotMin.y;
  const float uy = static_cast<float>(y.toUnit(yv));
  return {plotMin.x + static_cast<float>(x.toUnit(xv)) * w, yDown ? plotMin.y + uy * h : plotMax.y - uy * h};
}

double FigureLayout::xAt(float px) const {
  return x.fromUnit((px - plotMin.x) / std::max(1.0f, plotMax.x - plotMin.x));
}
double FigureLayout::yAt(float py) const {
  const float h = std::max(1.0f, plotMax.y - plotMin.y);
  return y.fromUnit(yDown ? (py - plotMin.y) / h : (plotMax.y - py) / h);
}

RangeAccumulator seriesXExtent(const Series& s, Scale scale) {
  RangeAccumulator r(scale);
  r.add(s.x);
  return r;
}

RangeAccumulator seriesYExtent(const Series& s, Scale scale, const std::optional<Range>& visibleX) {
  RangeAccumulator r(scale);
  // Every point, or with an x zoom those it shows; each with its band and error bar.
  auto inView = [&](size_t k) {
    return !visibleX || (k < s.x.size() && s.x[k] >= visibleX->min && s.x[k] <= visibleX->max);
  };
  for (size_t k = 0; k < s.y.size(); ++k) {
    if (!inView(k)) continue;
    r.add(s.y[k]);
    if (k < s.bandLow.size()) r.add(s.bandLow[k]);
    if (k < s.bandHigh.size()) r.add(s.bandHigh[k]);
    if (k < s.error.size()) r.add(s.y[k] - s.error[k]), r.add(s.y[k] + s.error[k]);  // bars reach y +- e
  }
  return r;
}

Range fittedXRange(const Figure& f, const std::vector<bool>& hidden, const SeriesExtent& extent) {
  if (f.heatmap) return heatmapRange(f.heatmap->cols);
  if (f.xRange) return *f.xRange;
  if (!f.xCategories.empty()) return heatmapRange(static_cast<int64_t>(f.xCategories.size()));
  RangeAccumulator r(f.xScale);
  for (size_t i = 0; i < f.series.size(); ++i)
    if (!isHidden(hidden, i)) r.add(extent(i));
  for (const Marker& m : f.markers) r.add(m.x);
  return r.padded(0.02);
}

Range fittedXRange(const Figure& f, const std::vector<bool>& hidden) {
  return fittedXRange(f, hidden, [&](size_t i) { return seriesXExtent(f.series[i], f.xScale); });
}

Range fittedYRange(const Figure& f, const std::vector<bool>& hidden, const std::optional<Range>& visibleX,
                   const SeriesExtent& extent) {
  if (f.heatmap) return heatmapRange(f.heatmap->rows);
  if (f.yRange) return *f.yRange;
  if (visibleX && !f.xCategories.empty()) return fittedYRange(f, hidden);  // bars: always the whole
  RangeAccumulator r(f.yScale);
  for (size_t i = 0; i < f.series.size(); ++i)
    if (!isHidden(hidden, i)) r.add(extent(i));
  if (visibleX && r.empty()) return fittedYRange(f, hidden);  // nothing in view: the whole data
  return r.padded(0.05);
}

Range fittedYRange(const Figure& f, const std::vector<bool>& hidden, const std::optional<Range>& visibleX) {
  return fittedYRange(f, hidden, visibleX,
                      [&](size_t i) { return seriesYExtent(f.series[i], f.yScale, visibleX); });
}

namespace {

// Words of `text` in lines no wider than `width` (a word wider than that gets a line of its own).
std::vector<std::string> wrapText(Canvas& canvas, const std::string& text, float size, float width) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(' ', start), text.size());
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    const std::string candidate = line.empty() ? word : line + " " + word;
    if (!line.empty() && canvas.textSize(candidate, size).x > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = candidate;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// Square cells: the data area gives up room along the axis with more of it per cell (its left and top stay,
// the colour bar follows the right edge).
void keepCellsSquare(FigureLayout& l) {
  const double cols = l.x.range.max - l.x.range.min, rows = l.y.range.max - l.y.range.min;
  if (!(cols > 0 && rows > 0)) return;
  const double cell = std::min((l.plotMax.x - l.plotMin.x) / cols, (l.plotMax.y - l.plotMin.y) / rows);
  l.plotMax.x = l.plotMin.x + static_cast<float>(cell * cols);
  l.plotMax.y = l.plotMin.y + static_cast<float>(cell * rows);
}

}  // namespace

namespace {

// One pass of layoutFigure; the y label wraps at `yLabelHeight`, or at the plot's height before a legend
// below takes some of it.
FigureLayout layoutPass(const Figure& f, Canvas& canvas, const Style& style, Point origin, Point size,
                        const std::optional<Range>& xView, const std::optional<Range>& yView,
                        const std::vector<bool>& hidden, FigureMemo* memo,
                        std::optional<float> yLabelHeight) {
  FigureLayout l;
  l.origin = origin;
  l.size = size;
  const Range fittedX = xView ? *xView : memo ? memo->fittedX(f, hidden) : fittedXRange(f, hidden);
  const Range fittedY = yView  ? *yView
                        : memo ? memo->fittedY(f, hidden, xView)
                               : fittedYRange(f, hidden, xView);
  l.x = {f.heatmap ? Scale::Linear : f.xScale, fittedX};
  l.y = {f.heatmap ? Scale::Linear : f.yScale, fittedY};
  const float text = canvas.textSize("0", style.fontSize).y;
  float top = kPad, bottom = kPad, left = kPad, right = kPad;
  // A title or subtitle wider than the figure (an experiment's, in the one-column size) wraps.
  const float titleLine = canvas.textSize("0", style.titleSize).y + 4;
  l.titleLines = wrapText(canvas, f.title, style.titleSize, size.x - 2 * kPad);
  l.subtitleLines = wrapText(canvas, f.subtitle, style.fontSize, size.x - 2 * kPad);
  top += static_cast<float>(l.titleLines.size()) * titleLine;
  top += static_cast<float>(l.subtitleLines.size()) * (text + 2);
  bottom += text + kTickLength + 4;  // x tick labels
  if (!f.xLabel.empty()) bottom += text + 4;
  // y tick labels: measure the widest label for this range.
  float widest = canvas.textSize("0.00", style.fontSize).x;
  const float plotHeightGuess = size.y - top - bottom;
  const auto yTicks = f.heatmap ? indexTicks(f.heatmap->rows, f.heatmap->rowLabels, l.y.range,
                                             plotHeightGuess, style.fontSize, style.fontSize)
                                : niceTicks(l.y, yTickTarget(plotHeightGuess, text));
  for (const Tick& t : yTicks) widest = std::max(widest, canvas.textSize(t.label, style.fontSize).x);
  left += widest + kTickLength + 4;
  // The y label, turned, wraps at the plot's height: one more line of text to the left for each. Never at
  // under half its length: a plot squeezed to nothing would otherwise stack it a word per line.
  l.yLabelLines = wrapText(
      canvas, f.yLabel, style.fontSize,
      std::max(yLabelHeight.value_or(plotHeightGuess), 0.5f * canvas.textSize(f.yLabel, style.fontSize).x));
  if (!l.yLabelLines.empty()) left += static_cast<float>(l.yLabelLines.size()) * (text + 2) + 4;
  if (f.heatmap && !f.heatmap->categories.empty()) {  // a legend of swatches: swatch, gap, widest name
    float widestName = canvas.textSize(f.heatmap->colorbarLabel, style.fontSize).x;
    for (const std::string& c : f.heatmap->categories)
      widestName = std::max(widestName, kColorbarWidth + 6 + canvas.textSize(c, style.fontSize).x);
    right += 10 + widestName + 6;
  } else if (f.heatmap) {
    const float labelWidth = std::max(canvas.textSize(formatTick(f.heatmap->vmax, 0.01), style.fontSize).x,
                                      canvas.textSize(formatTick(f.heatmap->vmin, 0.01), style.fontSize).x);
    right += kColorbarWidth + 6 + labelWidth + (f.heatmap->colorbarLabel.empty() ? 0 : text + 8) + 6;
  }
  l.plotMin = {origin.x + left, origin.y + top};
  l.plotMax = {origin.x + std::max(left + 20, size.x - right),
               origin.y + std::max(top + 20, size.y - bottom)};
  l.yDown = f.heatmap.has_value() || f.yDown;
  if (f.heatmap && style.squareHeatmapCells && f.heatmap->squareCells) keepCellsSquare(l);
  if (f.heatmap) {
    l.colorbarMin = Point{l.plotMax.x + 10, l.plotMin.y};
    l.colorbarMax = Point{l.plotMax.x + 10 + kColorbarWidth, l.plotMax.y};
  }
  if (f.legend && !f.heatmap) placeLegend(f, canvas, style, hidden, l, memo);
  return l;
}

}  // namespace

FigureLayout layoutFigure(const Figure& f, Canvas& canvas, const Style& style, Point origin, Point size,
                          const std::optional<Range>& xView, const std::optional<Range>& yView,
                          const std::vector<bool>& hidden, FigureMemo* memo) {
  FigureLayout l = layoutPass(f, canvas, style, origin, size, xView, yView, hidden, memo, std::nullopt);
  // A legend placed below the data took height from the plot after the y label was wrapped: wrapped again
  // to what is left, the label stays beside the plot instead of running into the title.
  const bool legendBelow = !l.legend.empty() && l.legend.front().min.y >= l.plotMax.y;
  const float plotHeight = l.plotMax.y - l.plotMin.y;
  if (legendBelow)
    for (const std::string& line : l.yLabelLines)
      if (canvas.textSize(line, style.fontSize).x > plotHeight + 0.5f)
        return layoutPass(f, canvas, style, origin, size, xView, yView, hidden, memo, plotHeight);
  return l;
}

namespace {

void drawTrace(Canvas& c, const Series& s, const Trace& t) {
  constexpr float kMarkerRadius = 2.6f;
  if (s.style != SeriesStyle::Markers) {
    if (t.band && !s.dashed)  // a band cannot carry dashes: a dashed one is drawn as its column path
      c.columnBand(t.columns, s.color, s.width);
    else if (t.points.size() >= 2)
      c.polyline(t.points, s.color, s.width, s.dashed);
  }
  if (s.style == SeriesStyle::Line) return;
  // Markers at each point, or at each column's extremes. Over a line, more than 2,000 points or 1,000
  // columns of them would merge into a smear and are left out; markers alone are always drawn: each point,
  // or each column's two, or past 1,000 columns (where they touch) the band they cover.
  const bool markersAlone = s.style == SeriesStyle::Markers;
  if (!t.dense()) {
    if (markersAlone || t.points.size() < 2000)
      for (const Point& p : t.points) c.circle(p, kMarkerRadius, s.color);
    return;
  }
  if (t.columns.size() < 1000) {
    for (const ColumnSpan& col : t.columns) {
      c.circle({col.x, col.top}, kMarkerRadius, s.color);
      if (col.bottom != col.top) c.circle({col.x, col.bottom}, kMarkerRadius, s.color);
    }
  } else if (markersAlone) {
    c.columnBand(t.columns, s.color, 2 * kMarkerRadius);
  }
}

}  // namespace

void drawFigure(Canvas& c, const Figure& f, const FigureLayout& l, const Style& style,
                const std::vector<bool>& hidden, FigureMemo* memo) {
  c.fillRect(l.origin, {l.origin.x + l.size.x, l.origin.y + l.size.y}, style.background);
  const float text = c.textSize("0", style.fontSize).y;
  float y = l.origin.y + kPad;
  // Title and subtitle lines on one centre: the data area's, where every line fits around it inside the
  // figure, else the figure's (lines wrapped to its width; a block pushed against one edge reads ragged).
  float widestHalf = 0;
  for (const std::string& line : l.titleLines)
    widestHalf = std::max(widestHalf, c.textSize(line, style.titleSize).x / 2);
  for (const std::string& line : l.subtitleLines)
    widestHalf = std::max(widestHalf, c.textSize(line, style.fontSize).x / 2);
  const float lo = l.origin.x + kPad, hi = l.origin.x + l.size.x - kPad,
              plotCentre = (l.plotMin.x + l.plotMax.x) / 2;
  const float cx =
      plotCentre - widestHalf >= lo && plotCentre + widestHalf <= hi ? plotCentre : (lo + hi) / 2;
  for (const std::string& line : l.titleLines) {
    c.text({cx, y}, line, style.foreground, style.titleSize, Align::Center, Align::Start);
    y += c.textSize("0", style.titleSize).y + 4;
  }
  for (const std::string& line : l.subtitleLines) {
    c.text({cx, y}, line, style.frame, style.fontSize, Align::Center, Align::Start);
    y += text + 2;
  }

  const float plotW = l.plotMax.x - l.plotMin.x, plotH = l.plotMax.y - l.plotMin.y;
  float widestColumnLabel = 0;
  if (f.heatmap)
    for (const std::string& label : f.heatmap->colLabels)
      widestColumnLabel = std::max(widestColumnLabel, c.textSize(label, style.fontSize).x);
  const auto xTicks = f.heatmap ? indexTicks(f.heatmap->cols, f.heatmap->colLabels, l.x.range, plotW,
                                             style.fontSize, widestColumnLabel)
                      : !f.xCategories.empty()
                          ? categoryTicks(f.xCategories, l.x.range, plotW, c, style.fontSize,
                                          l.origin.x - l.plotMin.x, l.origin.x + l.size.x - l.plotMin.x)
                          : niceTicks(l.x, xTickTarget(plotW, text), f.xIntegers ? 1.0 : 0.0);
  const auto yTicks = f.heatmap ? indexTicks(f.heatmap->rows, f.heatmap->rowLabels, l.y.range, plotH,
                                             style.fontSize, style.fontSize)
                                : niceTicks(l.y, yTickTarget(plotH, text));
  auto rowPixel = [&](double row) { return l.toPixel(0, row).y; };  // heatmaps: top-down rows

  if (f.heatmap) {
    c.pushClip(l.plotMin, l.plotMax);
    // The grid box in pixels for the whole matrix, positioned by the current view.
    const Point gridMin{l.toPixel(-0.5, 0).x, rowPixel(-0.5)};
    const Point gridMax{l.toPixel(static_cast<double>(f.heatmap->cols) - 0.5, 0).x,
                        rowPixel(static_cast<double>(f.heatmap->rows) - 0.5)};
    c.heatmapCells(gridMin, gridMax, *f.heatmap);
    c.popClip();
  } else {
    if (f.xCategories.empty())
      for (const Tick& t : xTicks) {
        const float px = l.toPixel(t.value, l.y.range.min).x;
        c.line({px, l.plotMin.y}, {px, l.plotMax.y}, style.grid, t.major ? 1.0f : 0.5f);
      }
    for (const Tick& t : yTicks) {
      const float py = l.toPixel(l.x.range.min, t.value).y;
      c.line({l.plotMin.x, py}, {l.plotMax.x, py}, style.grid, t.major ? 1.0f : 0.5f);
    }
    c.pushClip(l.plotMin, l.plotMax);
    // Marker labels (drawn over the data, on a backing of the background colour), where one that would
    // overlap another goes one row down.
    std::vector<std::pair<Point, Point>> placedLabels;
    std::vector<const Marker*> labelled;
    for (const Marker& m : f.markers) {
      const float px = l.toPixel(m.x, l.y.range.min).x;
      c.line({px, l.plotMin.y}, {px, l.plotMax.y}, m.color, 1.2f, true);
      if (m.label.empty()) continue;
      const Point size = c.textSize(m.label, style.fontSize * 0.9f);
      Point at{px + 3, l.plotMin.y + 2};  // right of its line, or left of it where the plot ends first
      if (at.x + size.x > l.plotMax.x) at.x = std::max(l.plotMin.x, px - 3 - size.x);
      auto overlaps = [&](const std::pair<Point, Point>& box) {
        return at.x < box.second.x && box.first.x < at.x + size.x && at.y < box.second.y &&
               box.first.y < at.y + size.y;
      };
      while (std::any_of(placedLabels.begin(), placedLabels.end(), overlaps)) at.y += size.y + 1;
      placedLabels.push_back({at, {at.x + size.x, at.y + size.y}});
      labelled.push_back(&m);
    }
    for (size_t i = 0; i < f.series.size(); ++i) {
      if (isHidden(hidden, i)) continue;
      const Series& s = f.series[i];
      if (!s.bandLow.empty()) drawBand(c, l, s);
      if (s.style == SeriesStyle::Bars) {
        for (size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k)
          if (std::isfinite(s.y[k])) drawBar(c, l, s, k, style);
        continue;
      }
      Trace computed;
      drawTrace(c, s, memo ? memo->trace(f, i, l) : (computed = seriesTrace(s, l)));
      for (size_t k = 0; k < std::min({s.error.size(), s.x.size(), s.y.size()});
           ++k) {  // error bars of markers
        if (!std::isfinite(s.error[k]) || s.error[k] <= 0 || !std::isfinite(s.y[k])) continue;
        const Point lo = l.toPixel(s.x[k], s.y[k] - s.error[k]), hi = l.toPixel(s.x[k], s.y[k] + s.error[k]);
        c.line(lo, hi, s.color, 1.2f);
        c.line({lo.x - 3, lo.y}, {lo.x + 3, lo.y}, s.color, 1.2f);
        c.line({hi.x - 3, hi.y}, {hi.x + 3, hi.y}, s.color, 1.2f);
      }
    }
    for (size_t k = 0; k < labelled.size(); ++k) {
      const auto& [min, max] = placedLabels[k];
      c.fillRect({min.x - 1, min.y}, {max.x + 1, max.y}, style.background, 0.8f);
      c.text(min, labelled[k]->label, labelled[k]->color, style.fontSize * 0.9f, Align::Start, Align::Start);
    }
    c.popClip();
  }
  c.rect(l.plotMin, l.plotMax, style.frame, 1.0f);

  for (const Tick& t : xTicks) {
    const float px = l.toPixel(t.value, l.y.range.min).x;
    c.line({px, l.plotMax.y}, {px, l.plotMax.y + (t.major ? kTickLength : kTickLength / 2)}, style.frame,
           1.0f);
    if (t.label.empty()) continue;
    // A label at the plot's edge is centred on its tick when it fits, else pulled inside the figure.
    const float cx =
        centredWithin(px, c.textSize(t.label, style.fontSize).x / 2, l.origin.x, l.origin.x + l.size.x);
    c.text({cx, l.plotMax.y + kTickLength + 2}, t.label, style.foreground, style.fontSize, Align::Center,
           Align::Start);
  }
  for (const Tick& t : yTicks) {
    const float py = f.heatmap ? rowPixel(t.value) : l.toPixel(l.x.range.min, t.value).y;
    c.line({l.plotMin.x - (t.major ? kTickLength : kTickLength / 2), py}, {l.plotMin.x, py}, style.frame,
           1.0f);
    if (!t.label.empty())
      c.text({l.plotMin.x - kTickLength - 3, py}, t.label, style.foreground, style.fontSize, Align::End,
             Align::Center);
  }
  if (!f.xLabel.empty())
    c.text({(l.plotMin.x + l.plotMax.x) / 2, l.plotMax.y + kTickLength + text + 6}, f.xLabel,
           style.foreground, style.fontSize, Align::Center, Align::Start);
  // Turned, its first line leftmost, centred on the plot's height (alignments are along the page's axes, as
  // for every text) but kept inside the figure: it was wrapped to the plot's height before a legend below
  // took some of it.
  for (size_t k = 0; k < l.yLabelLines.size(); ++k) {
    const float cy =
        centredWithin((l.plotMin.y + l.plotMax.y) / 2, c.textSize(l.yLabelLines[k], style.fontSize).x / 2,
                      l.origin.y + kPad, l.origin.y + l.size.y - kPad);
    c.text({l.origin.x + kPad + static_cast<float>(k) * (text + 2), cy}, l.yLabelLines[k], style.foreground,
           style.fontSize, Align::Start, Align::Center, /*vertical=*/true);
  }

  if (f.heatmap && l.colorbarMin && !f.heatmap->categories.empty()) {  // categorical: one swatch per name
    const Heatmap& h = *f.heatmap;
    float y = l.colorbarMin->y;
    if (!h.colorbarLabel.empty()) {
      c.text({l.colorbarMin->x, y}, h.colorbarLabel, style.foreground, style.fontSize, Align::Start,
             Align::Start);
      y += text + 4;
    }
    for (size_t i = 0; i < h.categories.size() && y + text <= l.origin.y + l.size.y; ++i) {
      const Point swatchMin{l.colorbarMin->x, y + 2},
          swatchMax{l.colorbarMin->x + kColorbarWidth, y + text - 2};
      c.fillRect(swatchMin, swatchMax, heatmapCellColor(h, static_cast<float>(i)));
      c.rect(swatchMin, swatchMax, style.frame, 1.0f);
      c.text({swatchMax.x + 6, y + text / 2}, h.categories[i], style.foreground, style.fontSize, Align::Start,
             Align::Center);
      y += text + 3;
    }
  } else if (f.heatmap && l.colorbarMin) {
    const Heatmap& h = *f.heatmap;
    c.colorbar(*l.colorbarMin, *l.colorbarMax, h.colormap);
    c.rect(*l.colorbarMin, *l.colorbarMax, style.frame, 1.0f);
    AxisTransform bar{Scale::Linear, {h.vmin, h.vmax}};
    const int barTicks = std::min(8, yTickTarget(l.colorbarMax->y - l.colorbarMin->y, text));
    float widestTick = 0;
    for (const Tick& t : niceTicks(bar, barTicks)) {
      const float py =
          l.colorbarMax->y - static_cast<float>(bar.toUnit(t.value)) * (l.colorbarMax->y - l.colorbarMin->y);
      c.line({l.colorbarMax->x, py}, {l.colorbarMax->x + 3, py}, style.frame, 1.0f);
      c.text({l.colorbarMax->x + 5, py}, t.label, style.foreground, style.fontSize, Align::Start,
             Align::Center);
      widestTick = std::max(widestTick, c.textSize(t.label, style.fontSize).x);
    }
    if (!h.colorbarLabel.empty())  // beside its tick labels (the data area may have shrunk to square cells)
      c.text({std::min(l.colorbarMax->x + 5 + widestTick + 6, l.origin.x + l.size.x - kPad - text),
              (l.colorbarMin->y + l.colorbarMax->y) / 2},
             h.colorbarLabel, style.foreground, style.fontSize, Align::Start, Align::Center,
             /*vertical=*/true);
  }

  drawLegend(c, f, l.legend, style, hidden);
}

}  // namespace sharelens::plot

namespace sharelens::plot {

uint64_t Heatmap::fingerprint() const {
  if (cachedFingerprint != 0) return cachedFingerprint;
  Fnv1a h;  // over rows, cols and the values' bytes
  h.update(&rows, sizeof rows);
  h.update(&cols, sizeof cols);
  h.update(values.data(), values.size() * sizeof(float));
  cachedFingerprint = h.value() == 0 ? 1 : h.value();
  return cachedFingerprint;
}

}  // namespace sharelens::plot
