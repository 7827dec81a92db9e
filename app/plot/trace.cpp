// Lines as they are drawn (figure.hpp: Trace): a series reduced to what its pixel columns show, and the
// outline of a dense band.
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "app/plot/figure.hpp"
#include "app/plot/plot_internal.hpp"

namespace sharelens::plot {

using namespace detail;

namespace {

// FigureLayout::toPixel with each axis's logarithms taken once, for loops over many points.
class UnitMap {
 public:
  explicit UnitMap(const AxisTransform& t) : m_log(t.scale == Scale::Log10) {
    m_lo = m_log ? std::log10(std::max(t.range.min, 1e-300)) : t.range.min;
    const double hi = m_log ? std::log10(std::max(t.range.max, 1e-300)) : t.range.max;
    m_span = hi - m_lo;
  }
  double operator()(double v) const {  // as AxisTransform::toUnit: non-positive values go to the range's min
    const double x = !m_log ? v : v > 0 ? std::log10(v) : m_lo;
    return m_span > 0 ? (x - m_lo) / m_span : 0.5;
  }

 private:
  bool m_log;
  double m_lo = 0, m_span = 0;
};

class PixelMap {
 public:
  explicit PixelMap(const FigureLayout& l) : m_l(l), m_x(l.x), m_y(l.y) {}
  float x(double v) const {
    return m_l.plotMin.x + static_cast<float>(m_x(v)) * (m_l.plotMax.x - m_l.plotMin.x);
  }
  float y(double v) const {
    const float u = static_cast<float>(m_y(v)), h = m_l.plotMax.y - m_l.plotMin.y;
    return m_l.yDown ? m_l.plotMin.y + u * h : m_l.plotMax.y - u * h;
  }
  Point operator()(double xv, double yv) const { return {x(xv), y(yv)}; }

 private:
  const FigureLayout& m_l;
  UnitMap m_x, m_y;
};

// Squared, so that the farthest point is found without a square root per point.
float squaredDistanceToSegment(Point p, Point a, Point b) {
  const float dx = b.x - a.x, dy = b.y - a.y, length2 = dx * dx + dy * dy;
  const float t =
      length2 > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / length2, 0.0f, 1.0f) : 0.0f;
  const float ex = p.x - (a.x + t * dx), ey = p.y - (a.y + t * dy);
  return ex * ex + ey * ey;
}

// Douglas-Peucker: a subset of the path's points (its ends always) such that every dropped point lies
// within `tolerance` of the simplified line.
std::vector<Point> simplifiedPath(const std::vector<Point>& path, float tolerance) {
  if (path.size() < 3) return path;
  std::vector<bool> keep(path.size(), false);
  keep.front() = keep.back() = true;
  std::vector<std::pair<size_t, size_t>> pending{{0, path.size() - 1}};
  while (!pending.empty()) {
    const auto [first, last] = pending.back();
    pending.pop_back();
    float farthest = 0;
    size_t at = first;
    for (size_t i = first + 1; i < last; ++i)
      if (const float d = squaredDistanceToSegment(path[i], path[first], path[last]); d > farthest)
        farthest = d, at = i;
    if (farthest <= tolerance * tolerance) continue;
    keep[at] = true;
    pending.push_back({first, at});
    pending.push_back({at, last});
  }
  std::vector<Point> out;
  for (size_t i = 0; i < path.size(); ++i)
    if (keep[i]) out.push_back(path[i]);
  return out;
}

// The pixel column of a pixel x, kept within int's range (a point far outside a deep zoom; NaN, which no
// drawn point has, the lowest).
int pixelColumn(float x) {
  constexpr float kFar = 1e9f;
  const float column = std::floor(x);
  return column >= kFar   ? static_cast<int>(kFar)
         : column > -kFar ? static_cast<int>(column)
                          : -static_cast<int>(kFar);
}

}  // namespace

SeriesShape seriesShape(const Series& s) {
  const size_t n = std::min(s.x.size(), s.y.size());
  // Each condition over all points as a count, without an early exit: the loop then vectorises.
  size_t falls = 0, nonFiniteX = 0, nonFiniteY = 0, nonPositive = 0;
  for (size_t i = 0; i < n; ++i) {
    nonFiniteX += !std::isfinite(s.x[i]);
    nonFiniteY += !std::isfinite(s.y[i]);
    nonPositive += !(s.y[i] > 0);
    falls += i > 0 && !(s.x[i] >= s.x[i - 1]);
  }
  return {.ascending = falls == 0 && nonFiniteX == 0,
          .finite = nonFiniteX == 0 && nonFiniteY == 0,
          .positive = nonPositive == 0};
}

Trace seriesTrace(const Series& s, const FigureLayout& l) {
  return seriesTrace(s, l, seriesShape(s));
}

Trace seriesTrace(const Series& s, const FigureLayout& l, const SeriesShape& shape) {
  Trace out;
  const size_t n = std::min(s.x.size(), s.y.size());
  if (n == 0) return out;
  auto drawable = [&](size_t i) {
    return std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && !(l.y.scale == Scale::Log10 && s.y[i] <= 0);
  };
  const bool ascending = shape.ascending;
  const bool everyPointDrawable = shape.finite && (l.y.scale != Scale::Log10 || shape.positive);
  // The visible index range (x sorted): one point of margin on each side so lines reach the edges.
  size_t begin = 0, end = n;
  if (ascending) {
    begin = static_cast<size_t>(
        std::lower_bound(s.x.begin(), s.x.begin() + static_cast<std::ptrdiff_t>(n), l.x.range.min) -
        s.x.begin());
    end = static_cast<size_t>(
        std::upper_bound(s.x.begin(), s.x.begin() + static_cast<std::ptrdiff_t>(n), l.x.range.max) -
        s.x.begin());
    begin = begin > 0 ? begin - 1 : 0;
    end = std::min(n, end + 1);
  }
  const PixelMap toPixel(l);
  const float width = l.plotMax.x - l.plotMin.x;
  out.pointsTraced = end - begin;
  if (static_cast<float>(end - begin) <= 2.0f * width) {  // sparse: every point
    out.points.reserve(end - begin);
    for (size_t i = begin; i < end; ++i)
      if (drawable(i)) out.points.push_back(toPixel(s.x[i], s.y[i]));
    return out;
  }
  // Dense: per pixel column its lowest and highest value. They are found on the values (the axis map is
  // monotonic): only the two extremes of each column are mapped to pixels.
  out.columns.reserve(static_cast<size_t>(width) + 4);
  std::vector<Point> extremes;  // each column's lowest and highest point, in the order they come
  auto addColumn = [&](int column, size_t low, size_t high) {
    const Point first = toPixel(s.x[std::min(low, high)], s.y[std::min(low, high)]);
    const Point second = toPixel(s.x[std::max(low, high)], s.y[std::max(low, high)]);
    extremes.push_back(first);
    if (low != high) extremes.push_back(second);
    out.columns.push_back(
        {static_cast<float>(column) + 0.5f, std::min(first.y, second.y), std::max(first.y, second.y)});
  };
  // The first lowest and first highest drawable point of [from, to), if any, into a column; `checked`:
  // whether points may be undrawable.
  auto scan = [&](int column, size_t from, size_t to, auto checked) {
    size_t i = from;
    if constexpr (decltype(checked)::value)
      while (i < to && !drawable(i)) ++i;
    if (i == to) return;
    size_t low = i, high = i;
    double lowest = s.y[i], highest = s.y[i];
    for (++i; i < to; ++i) {
      if constexpr (decltype(checked)::value)
        if (!drawable(i)) continue;
      const double v = s.y[i];
      if (v < lowest) lowest = v, low = i;
      if (v > highest) highest = v, high = i;
    }
    addColumn(column, low, high);
  };
  auto scanColumn = [&](int column, size_t from, size_t to) {
    everyPointDrawable ? scan(column, from, to, std::false_type{}) : scan(column, from, to, std::true_type{});
  };
  auto columnOf = [&](size_t i) { return pixelColumn(toPixel.x(s.x[i])); };
  if (ascending && l.x.scale == Scale::Linear) {
    // The column is monotonic in the index (an affine map of ascending values, each step rounding
    // monotonically): each column's last point is found by doubling steps and then bisection, mapping about
    // 2 log2(k) of its k points to pixels instead of all of them.
    for (size_t first = begin; first < end;) {
      const int column = columnOf(first);
      size_t inside = first, outside = end;  // columnOf(inside) == column; outside: end, or past the column
      for (size_t step = 1; inside + step < end; step *= 2) {
        if (columnOf(inside + step) != column) {
          outside = inside + step;
          break;
        }
        inside += step;
      }
      while (outside - inside > 1) {
        const size_t middle = inside + (outside - inside) / 2;
        (columnOf(middle) == column ? inside : outside) = middle;
      }
      scanColumn(column, first, outside);
      first = outside;
    }
  } else {  // a log axis, or x out of order: each drawable point's column, runs of one column together
    for (size_t first = begin; first < end;) {
      const int column = columnOf(first);
      size_t next = first + 1;
      while (next < end && (!drawable(next) || columnOf(next) == column)) ++next;
      scanColumn(column, first, next);
      first = next;
    }
  }
  if (out.columns.empty()) return out;  // nothing drawable in view (all NaN, or <= 0 on a log axis)
  std::vector<float> spans;
  spans.reserve(out.columns.size());
  for (const ColumnSpan& c : out.columns) spans.push_back(c.bottom - c.top);
  const auto middle = spans.begin() + static_cast<std::ptrdiff_t>(spans.size() / 2);
  std::nth_element(spans.begin(), middle, spans.end());
  out.band = *middle >= Trace::kBandSpan;
  if (!out.band || s.dashed) out.points = simplifiedPath(extremes, Trace::kPathTolerance);
  return out;
}

std::vector<ColumnSpan> bandOutline(std::span<const ColumnSpan> columns, float width) {
  std::vector<ColumnSpan> out;
  if (columns.empty()) return out;
  // A stroke w pixels wide reaches (w - 1) / 2 pixels further sideways than a 1-pixel one: where a line
  // is steep, each column also takes what the band holds that far to its left and right.
  const float reach = std::max(0.0f, (width - 1) / 2), half = width / 2;
  auto widened = [&](size_t i) {
    ColumnSpan w = columns[i];
    for (const int dir : {-1, 1})
      for (size_t j = i;;) {
        const size_t next = j + static_cast<size_t>(dir);  // wraps past 0 to a huge index: out of range
        if (next >= columns.size() || reach == 0) break;
        const float gap = std::abs(columns[next].x - columns[i].x);
        if (gap <= reach) {
          w.top = std::min(w.top, columns[next].top), w.bottom = std::max(w.bottom, columns[next].bottom);
          j = next;
          continue;
        }
        // The band between columns j and next, at reach from column i.
        const float t =
            (reach - std::abs(columns[j].x - columns[i].x)) / std::abs(columns[next].x - columns[j].x);
        w.top = std::min(w.top, columns[j].top + t * (columns[next].top - columns[j].top));
        w.bottom = std::max(w.bottom, columns[j].bottom + t * (columns[next].bottom - columns[j].bottom));
        break;
      }
    w.top -= half, w.bottom += half;
    return w;
  };
  out.reserve(columns.size() + 2);
  for (size_t i = 0; i < columns.size(); ++i) out.push_back(widened(i));
  ColumnSpan first = out.front(), last = out.back();
  first.x -= 0.5f, last.x += 0.5f;
  out.insert(out.begin(), first);
  out.push_back(last);
  return out;
}

std::vector<Point> bandPolygon(std::span<const ColumnSpan> columns, float width) {
  const std::vector<ColumnSpan> outline = bandOutline(columns, width);
  std::vector<Point> polygon;
  polygon.reserve(2 * outline.size());
  for (const ColumnSpan& v : outline) polygon.push_back({v.x, v.top});
  for (auto v = outline.rbegin(); v != outline.rend(); ++v) polygon.push_back({v->x, v->bottom});
  return polygon;
}

}  // namespace sharelens::plot
