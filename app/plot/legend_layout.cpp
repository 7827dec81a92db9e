#include "app/plot/legend_layout.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <span>
#include <utility>

#include "app/plot/figure_memo.hpp"
#include "app/plot/plot_internal.hpp"

namespace sharelens::plot::detail {
namespace {

// Whether a series gets a legend row: named, with points (a run's validation curve before its first
// evaluation names nothing on screen).
bool listedInLegend(const Series& s) {
  return !s.label.empty() && !s.y.empty();
}

// The part of segment a-b inside the box [min, max] (Liang-Barsky), as parameters t0 <= t1 in [0, 1];
// nullopt when it misses the box.
std::optional<std::pair<float, float>> clipSegment(Point a, Point b, Point min, Point max) {
  float t0 = 0, t1 = 1;
  const float d[2] = {b.x - a.x, b.y - a.y}, lo[2] = {min.x - a.x, min.y - a.y},
              hi[2] = {max.x - a.x, max.y - a.y};
  for (int axis = 0; axis < 2; ++axis) {
    if (d[axis] == 0) {
      if (lo[axis] > 0 || hi[axis] < 0) return std::nullopt;
      continue;
    }
    float enter = lo[axis] / d[axis], leave = hi[axis] / d[axis];
    if (enter > leave) std::swap(enter, leave);
    t0 = std::max(t0, enter), t1 = std::min(t1, leave);
    if (t0 > t1) return std::nullopt;
  }
  return std::pair{t0, t1};
}

// The part of segment a-b inside the plot, from a + t0 (b - a) to a + t1 (b - a), `length` pixels long.
struct VisibleSegment {
  Point a, b;
  float t0, t1, length;
};

// How much of the shown data each of a few boxes (the legend's candidate corners) covers, added up as it
// goes instead of keeping what it counts.
class BoxCounts {
 public:
  explicit BoxCounts(std::span<const std::pair<Point, Point>> boxes)
      : m_boxes(boxes), m_counts(boxes.size()) {
    m_left = m_right = boxes.empty() ? 0 : boxes.front().first.x;
    for (const auto& [min, max] : boxes) m_left = std::min(m_left, min.x), m_right = std::max(m_right, max.x);
  }
  void addPoint(Point p, double weight) {
    for (size_t k = 0; k < m_boxes.size(); ++k) {
      const auto& [min, max] = m_boxes[k];
      m_counts[k] += p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y ? weight : 0;
    }
  }
  // A column's points, spread evenly over its span: each box gets the share of `weight` that its rows hold.
  void addColumn(const ColumnSpan& c, double weight) {
    for (size_t k = 0; k < m_boxes.size(); ++k) {
      const auto& [min, max] = m_boxes[k];
      if (c.x < min.x || c.x > max.x) continue;
      const float height = c.bottom - c.top;
      if (height <= 0) {
        m_counts[k] += c.top >= min.y && c.top <= max.y ? weight : 0;
        continue;
      }
      const float inside = std::min(c.bottom, max.y) - std::max(c.top, min.y);
      m_counts[k] += inside > 0 ? weight * inside / height : 0;
    }
  }
  // Whether any box spans some x in [a, b].
  bool reachesColumns(float a, float b) const {
    if (a > b) std::swap(a, b);
    if (b < m_left || a > m_right) return false;
    for (const auto& [min, max] : m_boxes)
      if (b >= min.x && a <= max.x) return true;
    return false;
  }
  const std::vector<double>& counts() const { return m_counts; }

 private:
  std::span<const std::pair<Point, Point>> m_boxes;
  std::vector<double> m_counts;
  float m_left = 0, m_right = 0;  // the boxes' combined x extent
};

// Points every `spacing` pixels along a visible segment, each counted once (only those that can fall in a
// box are made).
void sampleSegment(const VisibleSegment& v, float spacing, BoxCounts& counts) {
  if (!(v.length >= spacing)) return;  // also NaN
  if (!counts.reachesColumns(v.a.x + v.t0 * (v.b.x - v.a.x), v.a.x + v.t1 * (v.b.x - v.a.x))) return;
  const auto n = static_cast<size_t>(v.length / spacing);
  for (size_t k = 1; k <= n; ++k) {
    const float t = v.t0 + (v.t1 - v.t0) * static_cast<float>(k) / static_cast<float>(n + 1);
    counts.addPoint({v.a.x + t * (v.b.x - v.a.x), v.a.y + t * (v.b.y - v.a.y)}, 1);
  }
}

// How many data points of the shown series each box covers, from each series' trace (what is drawn of it,
// seriesTrace): a dense trace's columns, each standing for an even share of the points traced, spread over
// its span, and samples every 6 px across the gaps that its band or line bridges between columns more than
// a pixel apart; a sparse trace's points, and for a line up to 2,048 samples along the visible parts of the
// segments between them (a line of three points crosses corners that hold none of them). Enough to tell
// which corner of the plot is emptiest, from what drawing the figure computes anyway.
std::vector<double> pointsInBoxes(const Figure& f, const std::vector<bool>& hidden,
                                  const std::function<const Trace&(size_t series)>& traceOf,
                                  const FigureLayout& l, std::span<const std::pair<Point, Point>> boxes) {
  constexpr float kSpacing = 6;            // pixels between a segment's samples, at most
  constexpr float kSegmentSamples = 2048;  // per series, spread over its whole visible length
  BoxCounts counts(boxes);
  std::vector<VisibleSegment> segments;
  // The part of a-b inside the plot, with its length in pixels (not std::hypot: its care for overflow,
  // which doubles cannot reach from floats, costs more than the rest of the pass); nullopt when it misses
  // the plot or its length is not finite (a point beyond a float's range in a deep zoom).
  auto visibleSegment = [&](Point a, Point b) -> std::optional<VisibleSegment> {
    const auto clipped = clipSegment(a, b, l.plotMin, l.plotMax);
    if (!clipped) return std::nullopt;
    const double dx = b.x - a.x, dy = b.y - a.y;
    const float length =
        (clipped->second - clipped->first) * static_cast<float>(std::sqrt(dx * dx + dy * dy));
    if (!std::isfinite(length)) return std::nullopt;
    return VisibleSegment{a, b, clipped->first, clipped->second, length};
  };
  for (size_t i = 0; i < f.series.size(); ++i) {
    if (isHidden(hidden, i)) continue;
    const Trace& t = traceOf(i);
    if (t.dense()) {
      const double perColumn = static_cast<double>(t.pointsTraced) / static_cast<double>(t.columns.size());
      for (size_t k = 0; k < t.columns.size(); ++k) {
        const ColumnSpan& c = t.columns[k];
        counts.addColumn(c, perColumn);
        if (k == 0 || c.x - t.columns[k - 1].x <= 1) continue;
        const ColumnSpan& before = t.columns[k - 1];
        if (const auto gap =
                visibleSegment({before.x, (before.top + before.bottom) / 2}, {c.x, (c.top + c.bottom) / 2}))
          sampleSegment(*gap, kSpacing, counts);
      }
      continue;
    }
    segments.clear();
    float length = 0;
    for (size_t k = 0; k < t.points.size(); ++k) {
      counts.addPoint(t.points[k], 1);
      if (k == 0 || !drawsLine(f.series[i])) continue;
      if (const auto v = visibleSegment(t.points[k - 1], t.points[k])) {
        segments.push_back(*v);
        length += v->length;
      }
    }
    const float spacing = std::max(kSpacing, length / kSegmentSamples);
    for (const VisibleSegment& v : segments) sampleSegment(v, spacing, counts);
  }
  // What the traces leave out: error bars (a forest's intervals, a bar's: the caps and down their length)
  // and a bar's body (its edges and middle, from its top down to the axis), as the drawing draws them. At
  // most about kSegmentSamples samples a series, as for its line.
  const float plotHeight = l.plotMax.y - l.plotMin.y;
  for (size_t i = 0; i < f.series.size(); ++i) {
    if (isHidden(hidden, i)) continue;
    const Series& s = f.series[i];
    const size_t n = std::min(s.x.size(), s.y.size());
    const float spacing = std::max(kSpacing, plotHeight * 3 * static_cast<float>(n) / kSegmentSamples);
    auto sampleDown = [&](Point a, Point b) {
      if (const auto v = visibleSegment(a, b)) sampleSegment(*v, spacing, counts);
    };
    for (size_t k = 0; k < n; ++k) {
      if (!std::isfinite(s.y[k])) continue;
      if (k < s.error.size() && std::isfinite(s.error[k]) && s.error[k] > 0) {
        const Point lo = l.toPixel(s.x[k], s.y[k] - s.error[k]), hi = l.toPixel(s.x[k], s.y[k] + s.error[k]);
        counts.addPoint(lo, 1), counts.addPoint(hi, 1);
        sampleDown(lo, hi);
      }
      if (s.style == SeriesStyle::Bars)
        for (const double dx : {-s.barWidth / 2, 0.0, s.barWidth / 2})
          sampleDown(l.toPixel(s.x[k] + dx, s.y[k]), l.toPixel(s.x[k] + dx, l.y.range.min));
    }
  }
  for (const Marker& m : f.markers) {  // a marker's dashed line, as points every kSpacing pixels down it
    const float px = l.toPixel(m.x, l.y.range.min).x;
    if (px >= l.plotMin.x && px <= l.plotMax.x)
      sampleSegment({{px, l.plotMin.y}, {px, l.plotMax.y}, 0, 1, l.plotMax.y - l.plotMin.y}, kSpacing,
                    counts);
  }
  return counts.counts();
}

// Each legend entry's width (its swatch, gap and label) and the series it names, in order; and a row's
// height.
struct LegendEntries {
  std::vector<float> widths;
  std::vector<size_t> series;
  float rowHeight = 0;
};

LegendEntries legendEntries(const Figure& f, Canvas& canvas, const Style& style) {
  LegendEntries e;
  for (size_t i = 0; i < f.series.size(); ++i)
    if (listedInLegend(f.series[i])) {
      e.widths.push_back(canvas.textSize(f.series[i].label, style.fontSize).x + 34);
      e.series.push_back(i);
    }
  e.rowHeight = canvas.textSize("0", style.fontSize).y + 4;
  return e;
}

// A legend's entries in lines no wider than `usable` (index ranges): in columns of the widest entry's width
// when as many columns as fit take no more lines than packing them (entries that line up read as a table),
// else each entry as wide as its own label, packed into lines like words (a forest plot's five reference
// lines, one of them long, take three lines of a one-column figure instead of five). nullopt when an entry
// is wider than `usable`.
struct LegendLines {
  std::vector<std::pair<size_t, size_t>> lines;
  bool aligned = false;  // columns of the widest entry's width
  float widest = 0;
  float widthOf(const LegendEntries& e, size_t k) const { return aligned ? widest : e.widths[k]; }
  float height(const LegendEntries& e) const { return e.rowHeight * static_cast<float>(lines.size()) + 6; }
};

std::optional<LegendLines> legendLines(const LegendEntries& e, float usable) {
  LegendLines result;
  result.widest = e.widths.empty() ? 0 : *std::max_element(e.widths.begin(), e.widths.end());
  if (!(result.widest > 0) || result.widest > usable) return std::nullopt;
  auto linesOf = [&](auto&& widthOf) {
    std::vector<std::pair<size_t, size_t>> lines;
    float used = 0;
    for (size_t k = 0; k < e.widths.size(); ++k) {
      if (lines.empty() || used + widthOf(k) > usable) lines.push_back({k, k}), used = 0;
      lines.back().second = k + 1;
      used += widthOf(k);
    }
    return lines;
  };
  auto columns = linesOf([&](size_t) { return result.widest; });
  auto packed = linesOf([&](size_t k) { return e.widths[k]; });
  result.aligned = columns.size() <= packed.size();
  result.lines = std::move(result.aligned ? columns : packed);
  return result;
}

// The rows of the lines from `top` (the box's top edge; rows start 3 below it), centred on `centre` and kept
// within [left, right]: the columns as one block, packed lines each on its own.
void appendLegendRows(const LegendEntries& e, const LegendLines& ll, float top, float centre, float left,
                      float right, std::vector<FigureLayout::LegendRow>& rows) {
  const auto& lines = ll.lines;
  for (size_t line = 0; line < lines.size(); ++line) {
    const auto [begin, end] = lines[line];
    float width = 0;  // of this line, or of the first (the widest) for columns, whose lines start together
    for (size_t k = ll.aligned ? lines[0].first : begin; k < (ll.aligned ? lines[0].second : end); ++k)
      width += ll.widthOf(e, k);
    float x = std::clamp(centre - width / 2, left, right - width);
    const float y = top + 3 + e.rowHeight * static_cast<float>(line);
    for (size_t k = begin; k < end; ++k) {
      rows.push_back({e.series[k], {x, y}, {x + ll.widthOf(e, k), y + e.rowHeight}});
      x += ll.widthOf(e, k);
    }
  }
}

// The legend's entries below the x axis label, with the data area shrunk to make room, in lines as
// legendLines lays them, centred under the data area, inside the figure. Returns 0 when placed; else, with
// nothing changed, the height the figure would need to grow by for the legend to go below with the data area
// keeping the height it has, and at least half of what is left to it (the legend would leave the plot under
// half its height), or a negative number when an entry is wider than the figure.
float placeLegendBelow(const LegendEntries& e, FigureLayout& l) {
  const auto lines = legendLines(e, l.size.x - 2 * kPad);
  if (!lines) return -1;
  const float height = lines->height(e);
  const float plotHeight = l.plotMax.y - l.plotMin.y;
  if (height + 4 > plotHeight / 2) return std::max(height + 4, 2 * (height + 4) - plotHeight);
  l.plotMax.y -= height + 4;
  appendLegendRows(e, *lines, l.origin.y + l.size.y - kPad - height, (l.plotMin.x + l.plotMax.x) / 2,
                   l.origin.x + kPad, l.origin.x + l.size.x - kPad, l.legend);
  return 0;
}

}  // namespace

// One legend row per named series with points (a run's validation curve before its first evaluation names
// nothing on screen), in the corner of the plot that covers the fewest data points and marker lines
// (top-right on ties), like matplotlib's loc="best" restricted to corners; for an export, below the plot when
// every corner covers some (Style::legendBelowRatherThanOverData).
void placeLegend(const Figure& f, Canvas& canvas, const Style& style, const std::vector<bool>& hidden,
                 FigureLayout& l, FigureMemo* memo) {
  const LegendEntries entries = legendEntries(f, canvas, style);
  const std::vector<float>& widths = entries.widths;
  if (widths.empty()) return;
  const size_t rows = widths.size();
  const float rowH = entries.rowHeight, boxW = *std::max_element(widths.begin(), widths.end()),
              boxH = rowH * static_cast<float>(rows);
  const float inset = 8;
  const Point corners[] = {{l.plotMax.x - boxW - inset, l.plotMin.y + inset},
                           {l.plotMin.x + inset, l.plotMin.y + inset},
                           {l.plotMax.x - boxW - inset, l.plotMax.y - boxH - inset},
                           {l.plotMin.x + inset, l.plotMax.y - boxH - inset}};
  auto emptiestCorner = [&] {
    std::pair<Point, Point> boxes[std::size(corners)];
    for (size_t k = 0; k < std::size(corners); ++k)
      boxes[k] = {{corners[k].x - 3, corners[k].y - 3}, {corners[k].x + boxW + 3, corners[k].y + boxH + 3}};
    Trace scratch;  // without a memo (which keeps them for the drawing), each trace in turn
    auto traceOf = [&](size_t i) -> const Trace& {
      return memo ? memo->trace(f, i, l) : (scratch = seriesTrace(f.series[i], l));
    };
    std::vector<double> covered = pointsInBoxes(f, hidden, traceOf, l, boxes);
    if (boxW + 2 * inset > l.plotMax.x - l.plotMin.x || boxH + 2 * inset > l.plotMax.y - l.plotMin.y)
      std::fill(covered.begin(), covered.end(), HUGE_VAL);  // no corner holds it: it covers the frame
    const auto emptiest = std::min_element(covered.begin(), covered.end());
    const auto corner = static_cast<size_t>(emptiest - covered.begin());
    // Past the corners: below the plot if there is room, else that corner.
    return *emptiest > 0 && style.legendBelowRatherThanOverData ? std::size(corners) + corner : corner;
  };
  const size_t choice = memo ? memo->legendCorner(f, l, {boxW, boxH}, style.legendBelowRatherThanOverData,
                                                  hidden, emptiestCorner)
                             : emptiestCorner();
  if (choice >= std::size(corners)) {
    const float grow = placeLegendBelow(entries, l);
    if (grow == 0) return;
    l.heightWanted = std::max(grow, 0.0f);  // an export grows by it and lays out again (figure_export.cpp)
  }
  // A legend wider or taller than the plot (a long label in a small export) still stays inside the figure.
  Point best = corners[choice % std::size(corners)];
  best.x = std::max(l.origin.x + kPad, std::min(best.x, l.origin.x + l.size.x - kPad - boxW));
  best.y = std::max(l.origin.y + kPad, std::min(best.y, l.origin.y + l.size.y - kPad - boxH));
  float y = best.y;
  for (const size_t i : entries.series) {
    l.legend.push_back({i, {best.x, y}, {best.x + boxW, y + rowH}});
    y += rowH;
  }
}

}  // namespace sharelens::plot::detail

namespace sharelens::plot {

std::optional<LegendBlock> legendBlock(const Figure& f, Canvas& canvas, const Style& style, float width) {
  const detail::LegendEntries entries = detail::legendEntries(f, canvas, style);
  const auto lines = detail::legendLines(entries, width - 2 * detail::kPad);
  if (!lines) return std::nullopt;
  LegendBlock block;
  block.height = lines->height(entries);
  detail::appendLegendRows(entries, *lines, 0, width / 2, detail::kPad, width - detail::kPad, block.rows);
  return block;
}

void drawLegend(Canvas& c, const Figure& f, std::span<const FigureLayout::LegendRow> rows, const Style& style,
                const std::vector<bool>& hidden) {
  if (rows.empty()) return;
  Point boxMin = rows.front().min, boxMax = rows.front().max;  // around every row (one column or more)
  for (const FigureLayout::LegendRow& row : rows) {
    boxMin = {std::min(boxMin.x, row.min.x), std::min(boxMin.y, row.min.y)};
    boxMax = {std::max(boxMax.x, row.max.x), std::max(boxMax.y, row.max.y)};
  }
  boxMin.y -= 3, boxMax.y += 3;
  c.fillRect(boxMin, boxMax, style.background, 0.85f);
  c.rect(boxMin, boxMax, style.grid, 1.0f);
  for (const FigureLayout::LegendRow& row : rows) {
    const Series& s = f.series[row.series];
    const bool off = detail::isHidden(hidden, row.series);
    const float cy = (row.min.y + row.max.y) / 2;
    if (s.style == SeriesStyle::Bars) {  // a swatch, hatched like its bars
      const Point a{row.min.x + 8, cy - 5}, b{row.min.x + 22, cy + 5};
      c.fillRect(a, b, off ? style.grid : s.color, s.hatched ? 0.18f : 0.9f);
      if (s.hatched)
        c.rect(a, b, off ? style.grid : s.color, 1.0f),
            c.line({a.x, b.y}, {b.x, a.y}, off ? style.grid : s.color, 1.0f);
    } else {
      c.line({row.min.x + 6, cy}, {row.min.x + 24, cy}, off ? style.grid : s.color, 2.5f, s.dashed);
    }
    c.text({row.min.x + 28, cy}, s.label, off ? style.frame : style.foreground, style.fontSize, Align::Start,
           Align::Center);
  }
}

}  // namespace sharelens::plot
