// What an on-screen figure keeps between frames so that its unchanged data is not scanned again: the fitted
// ranges, the legend's corner and each series' trace (its points, or its per-column band) and shape. Those
// are the passes over every point (about 6 ms a frame for ten runs of 20,000 points on this project's 2-core
// machine), and their inputs rarely change from one frame to the next.
//
// Each result is kept with a key hashed from everything it was computed from: each series' revision where
// its builder keeps one (Series::revision; the builder then owes a new one with every change), else the
// series' values (hashed again every frame by bind(), so a value changed in place, a figure rebuilt at the
// same address or a new point is seen), the hidden series, the zoom, the plot's box. A figure is drawn the
// same with or without a memo (tests/app/test_plot.cpp draws both and compares). Exports use one for the
// figure they draw, so that the traces the legend is placed by are not computed again for the drawing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "app/plot/figure.hpp"

namespace sharelens::plot {

// A 64-bit hash of words: FNV-1a's xor-multiply step on whole words followed by a rotation (so that changes
// in the top bits, a double's sign and exponent, reach the low bits and the next multiply spreads them),
// over four interleaved lanes for a long run of doubles (a quarter of the dependent multiplies). Each step
// is a bijection of its lane, so changing any one word always changes the value.
class WordHash {
 public:
  WordHash& add(uint64_t word);
  WordHash& add(double value);
  WordHash& add(float value);
  WordHash& add(std::span<const double> values);  // their count, then their bits
  WordHash& add(const std::optional<Range>& range);
  WordHash& add(const AxisTransform& axis);   // its scale and range
  WordHash& add(const FigureLayout& layout);  // where data lands: both axes, the plot box, yDown
  WordHash& add(const std::vector<bool>& flags);
  uint64_t value() const { return m_state; }

 private:
  uint64_t m_state = 1469598103934665603ull;
};

class FigureMemo {
 public:
  // Hashes the figure's data (each series' x, y, error bars and band, or only its revision where it has
  // one; markers; axes). Call once a frame, before the figure is laid out or drawn with this memo.
  void bind(const Figure& figure);

  // fittedXRange / fittedYRange of the bound figure, from each series' extent as it was kept: a changed
  // series (a live run's new step) is scanned again, the others are not.
  Range fittedX(const Figure& figure, const std::vector<bool>& hidden);
  Range fittedY(const Figure& figure, const std::vector<bool>& hidden, const std::optional<Range>& visibleX);
  // The legend's place (a corner, or below the plot where `mayGoBelow`): `choose` runs only when the bound
  // data, the hidden series, the layout, the legend box's size or `mayGoBelow` differ from the last call's.
  size_t legendCorner(const Figure& figure, const FigureLayout& layout, Point box, bool mayGoBelow,
                      const std::vector<bool>& hidden, const std::function<size_t()>& choose);
  // seriesTrace of series `index` of the bound figure in this layout.
  const Trace& trace(const Figure& figure, size_t index, const FigureLayout& layout);

  // How many results were computed rather than reused, since construction (for tests).
  size_t recomputed() const { return m_recomputed; }
  // How many series' extents were scanned rather than reused (for tests).
  size_t extentsScanned() const { return m_extentsScanned; }
  // How many series' shapes (seriesShape) were found rather than reused (for tests).
  size_t shapesFound() const { return m_shapesFound; }

 private:
  template <class T>
  struct Slot {
    uint64_t key = 0;
    bool valid = false;
    T value{};
  };
  // The slot's value, computed (and counted in `computed`) unless it was computed for this key.
  template <class T, class Compute>
  const T& lookup(Slot<T>& slot, uint64_t key, Compute compute, size_t& computed);
  void requireBound(const Figure& figure);

  const Figure* m_bound = nullptr;
  uint64_t m_data = 0;              // the whole figure's data
  std::vector<uint64_t> m_series;   // each series' values
  Slot<Range> m_x, m_y, m_yInView;  // m_yInView: refitted to a zoom's x range
  Slot<size_t> m_corner;
  std::vector<Slot<Trace>> m_lines;
  std::vector<Slot<SeriesShape>> m_shapes;  // per series, whatever the layout
  std::vector<Slot<RangeAccumulator>> m_xExtents, m_yExtents, m_yExtentsInView;  // per series
  size_t m_recomputed = 0, m_extentsScanned = 0, m_shapesFound = 0;
};

}  // namespace sharelens::plot
