#include "app/plot/figure_memo.hpp"

#include <bit>

namespace sharelens::plot {
namespace {

constexpr uint64_t kPrime = 1099511628211ull;  // FNV-1a's 64-bit prime

// FNV-1a's step, then a rotation: a multiply carries a difference only upwards, so without it a change
// confined to the top bits (a sign, a power of two) stays there, and two sign flips cancel exactly.
uint64_t step(uint64_t state, uint64_t word) {
  return std::rotl((state ^ word) * kPrime, 29);
}

}  // namespace

WordHash& WordHash::add(uint64_t word) {
  m_state = step(m_state, word);
  return *this;
}

WordHash& WordHash::add(double value) {
  return add(std::bit_cast<uint64_t>(value));
}

WordHash& WordHash::add(float value) {
  return add(uint64_t{std::bit_cast<uint32_t>(value)});
}

WordHash& WordHash::add(std::span<const double> values) {
  uint64_t lanes[4] = {m_state, m_state + 1, m_state + 2, m_state + 3};
  size_t i = 0;
  for (; i + 4 <= values.size(); i += 4)
    for (size_t k = 0; k < 4; ++k) lanes[k] = step(lanes[k], std::bit_cast<uint64_t>(values[i + k]));
  for (; i < values.size(); ++i) lanes[0] = step(lanes[0], std::bit_cast<uint64_t>(values[i]));
  add(uint64_t{values.size()});
  for (uint64_t lane : lanes) add(lane);
  return *this;
}

WordHash& WordHash::add(const std::optional<Range>& range) {
  add(uint64_t{range.has_value()});
  return range ? add(range->min).add(range->max) : *this;
}

WordHash& WordHash::add(const AxisTransform& a) {
  return add(uint64_t{a.scale == Scale::Log10}).add(a.range.min).add(a.range.max);
}

WordHash& WordHash::add(const FigureLayout& l) {
  add(l.x).add(l.y).add(l.plotMin.x).add(l.plotMin.y).add(l.plotMax.x).add(l.plotMax.y);
  return add(uint64_t{l.yDown});
}

WordHash& WordHash::add(const std::vector<bool>& flags) {
  add(uint64_t{flags.size()});
  for (bool f : flags) add(uint64_t{f});
  return *this;
}

template <class T, class Compute>
const T& FigureMemo::lookup(Slot<T>& slot, uint64_t key, Compute compute, size_t& computed) {
  if (!slot.valid || slot.key != key) {
    slot.value = compute();
    slot.key = key;
    slot.valid = true;
    ++computed;
  }
  return slot.value;
}

void FigureMemo::bind(const Figure& f) {
  m_bound = &f;
  m_series.clear();
  WordHash data;
  for (const Series& s : f.series) {
    WordHash h;
    if (s.revision != 0)
      h.add(s.revision);
    else
      h.add(s.x).add(s.y).add(s.error).add(s.bandLow).add(s.bandHigh);
    h.add(uint64_t{s.dashed});  // a dashed band keeps the path it is drawn as (seriesTrace)
    m_series.push_back(h.value());
    data.add(h.value()).add(
        uint64_t{static_cast<uint8_t>(s.style)});  // markers or a line: the legend's corner
  }
  data.add(uint64_t{f.xScale == Scale::Log10}).add(uint64_t{f.yScale == Scale::Log10});
  data.add(f.xRange).add(f.yRange).add(uint64_t{f.xCategories.size()});
  data.add(uint64_t{f.heatmap.has_value()});
  if (f.heatmap) data.add(uint64_t(f.heatmap->rows)).add(uint64_t(f.heatmap->cols));
  for (const Marker& m : f.markers) data.add(m.x);
  m_data = data.value();
  m_lines.resize(f.series.size());
  m_shapes.resize(f.series.size());
  m_xExtents.resize(f.series.size());
  m_yExtents.resize(f.series.size());
  m_yExtentsInView.resize(f.series.size());
}

void FigureMemo::requireBound(const Figure& f) {
  if (&f != m_bound) bind(f);  // another figure: hashed now, never mistaken for the bound one
}

Range FigureMemo::fittedX(const Figure& f, const std::vector<bool>& hidden) {
  requireBound(f);
  auto seriesExtent = [&](size_t i) {
    const uint64_t key = WordHash().add(m_series[i]).add(uint64_t{f.xScale == Scale::Log10}).value();
    auto scan = [&] { return seriesXExtent(f.series[i], f.xScale); };
    return lookup(m_xExtents[i], key, scan, m_extentsScanned);
  };
  const uint64_t key = WordHash().add(m_data).add(hidden).value();
  return lookup(
      m_x, key, [&] { return fittedXRange(f, hidden, seriesExtent); }, m_recomputed);
}

Range FigureMemo::fittedY(const Figure& f, const std::vector<bool>& hidden,
                          const std::optional<Range>& visibleX) {
  requireBound(f);
  // The whole data's range apart from a zoom's: a zoomed plot asks for both every frame (plotWidget clamps
  // the zoom to the whole).
  Slot<Range>& range = visibleX ? m_yInView : m_y;
  std::vector<Slot<RangeAccumulator>>& extents = visibleX ? m_yExtentsInView : m_yExtents;
  auto seriesExtent = [&](size_t i) {
    const uint64_t key =
        WordHash().add(m_series[i]).add(uint64_t{f.yScale == Scale::Log10}).add(visibleX).value();
    auto scan = [&] { return seriesYExtent(f.series[i], f.yScale, visibleX); };
    return lookup(extents[i], key, scan, m_extentsScanned);
  };
  const uint64_t key = WordHash().add(m_data).add(hidden).add(visibleX).value();
  return lookup(
      range, key, [&] { return fittedYRange(f, hidden, visibleX, seriesExtent); }, m_recomputed);
}

size_t FigureMemo::legendCorner(const Figure& f, const FigureLayout& l, Point box, bool mayGoBelow,
                                const std::vector<bool>& hidden, const std::function<size_t()>& choose) {
  requireBound(f);
  const uint64_t key =
      WordHash().add(m_data).add(hidden).add(l).add(box.x).add(box.y).add(uint64_t{mayGoBelow}).value();
  return lookup(m_corner, key, choose, m_recomputed);
}

const Trace& FigureMemo::trace(const Figure& f, size_t index, const FigureLayout& l) {
  requireBound(f);
  const Series& s = f.series[index];
  auto trace = [&] {
    const SeriesShape& shape = lookup(
        m_shapes[index], m_series[index], [&] { return seriesShape(s); }, m_shapesFound);
    return seriesTrace(s, l, shape);
  };
  return lookup(m_lines[index], WordHash().add(m_series[index]).add(l).value(), trace, m_recomputed);
}

}  // namespace sharelens::plot
