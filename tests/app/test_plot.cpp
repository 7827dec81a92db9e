// Plot and designer logic without a window: axes and ticks, zoom and pan, decimation, smoothing, figure
// builders, designer painting, and real Cairo exports to PNG, SVG and PDF.
#include <cairo-pdf.h>
#include <cairo.h>
#include <gtest/gtest.h>
#include <imgui_internal.h>  // ImDrawListSharedData, for a draw list outside a frame

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <tuple>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/esd.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/spectra.hpp"
#include "app/export/cairo_canvas.hpp"
#include "app/export/figure_export.hpp"
#include "app/export/svg_canvas.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/imgui_canvas.hpp"
#include "app/plot/list_renderer.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/assets.hpp"
#include "core/error.hpp"
#include "core/experiment_report.hpp"
#include "core/param_count.hpp"
#include "core/statistics.hpp"
#include "core/topology.hpp"
#include "core/topology_edit.hpp"
#include "tests/support/colour_distance.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/process.hpp"

namespace sharelens {
namespace {

using namespace plot;
namespace fs = std::filesystem;

std::vector<double> values(const std::vector<Tick>& ticks, bool majorOnly = true) {
  std::vector<double> out;
  for (const Tick& t : ticks)
    if (!majorOnly || t.major) out.push_back(t.value);
  return out;
}

TEST(Axis, NiceStepsAreOneTwoFive) {
  EXPECT_DOUBLE_EQ(niceStep(10, 5), 2);
  EXPECT_DOUBLE_EQ(niceStep(1, 4), 0.2);
  EXPECT_DOUBLE_EQ(niceStep(7, 6), 1);
  EXPECT_DOUBLE_EQ(niceStep(1300, 6), 200);
  EXPECT_DOUBLE_EQ(niceStep(0.03, 6), 0.005);
  EXPECT_EQ(values(niceTicks({Scale::Linear, {0, 10}}, 5)), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  const std::vector<double> tenths = values(niceTicks({Scale::Linear, {-0.3, 0.35}}, 6));
  const std::vector<double> expected = {-0.3, -0.2, -0.1, 0, 0.1, 0.2, 0.3};
  ASSERT_EQ(tenths.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(tenths[i], expected[i], 1e-15);
  EXPECT_EQ(tenths[3], 0.0) << "zero is exactly zero, not 5.5e-17";
}

TEST(Axis, LogTicksAtDecadesWithMinors) {
  const auto ticks = niceTicks({Scale::Log10, {1e-3, 1}}, 6);
  const std::vector<double> decades = values(ticks, true);
  ASSERT_EQ(decades.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(decades[i], std::pow(10.0, static_cast<double>(i) - 3), 1e-15);
  EXPECT_EQ(ticks.front().label, "1e-3");
  EXPECT_GT(ticks.size(), 20u) << "minor ticks 2..9 per decade";
  // Many decades: majors thin out, to twice a linear axis's count (a decade's label is one short word),
  // counted from 10^0.
  const std::vector<double> many = values(niceTicks({Scale::Log10, {1e-12, 1e3}}, 5), true);
  EXPECT_LE(many.size(), 10u);
  EXPECT_GE(many.size(), 5u);
  EXPECT_TRUE(std::find(many.begin(), many.end(), 1.0) != many.end()) << "1 is one of the labelled decades";
  // A short axis over four decades (a one-column figure's singular values, issue 41 item 6): every decade
  // labelled, not two of them.
  EXPECT_EQ(values(niceTicks({Scale::Log10, {2e-4, 1.3}}, 2), true),
            (std::vector<double>{1e-3, 1e-2, 1e-1, 1}));
  // Less than a decade falls back to linear ticks inside it.
  EXPECT_FALSE(values(niceTicks({Scale::Log10, {2, 8}}, 5)).empty());
  // One decade inside (0.3 to 3, a loss curve): the 2s, 3s and 5s are labelled as well as the 1.
  std::vector<std::string> labels;
  for (const Tick& t : niceTicks({Scale::Log10, {0.3, 3}}, 6))
    if (!t.label.empty()) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"0.3", "0.5", "1", "2", "3"}));
  // Two decades inside but a span of less than two (0.7 to 10.5 GiB, the README's memory axis): the 2s and
  // 5s; the 3s would come within 9% of the axis of the 2s on a span near two decades (0.11 to 10.9).
  auto labelsOf = [](Range r) {
    std::vector<std::string> out;
    for (const Tick& t : niceTicks({Scale::Log10, r}, 6))
      if (!t.label.empty()) out.push_back(t.label);
    return out;
  };
  EXPECT_EQ(labelsOf({0.7, 10.5}), (std::vector<std::string>{"1", "2", "5", "10"}));
  EXPECT_EQ(labelsOf({0.11, 10.9}), (std::vector<std::string>{"0.2", "0.5", "1", "2", "5", "10"}));
  // Two decades or more: only the decades are labelled.
  for (const Tick& t : niceTicks({Scale::Log10, {0.05, 20}}, 6))
    EXPECT_EQ(t.label.empty(), !t.major) << t.value;
}

TEST(Axis, TransformsRoundTripAndLabelsAreCompact) {
  const AxisTransform lin{Scale::Linear, {2, 6}}, log{Scale::Log10, {1e-2, 1e2}};
  EXPECT_DOUBLE_EQ(lin.toUnit(4), 0.5);
  EXPECT_DOUBLE_EQ(log.toUnit(1), 0.5);
  EXPECT_NEAR(log.fromUnit(log.toUnit(3.7)), 3.7, 1e-12);
  EXPECT_EQ(formatTick(0.00012, 0.0001), "1.2e-4");
  EXPECT_EQ(formatTick(1500, 500), "1500");
  EXPECT_EQ(formatTick(2.5, 0.5), "2.5");
  EXPECT_EQ(formatTick(250000, 50000), "2.5e5");
  const Range r = dataRange({1, 5, NAN, 3}, Scale::Linear, 0.0);
  EXPECT_DOUBLE_EQ(r.min, 1);
  EXPECT_DOUBLE_EQ(r.max, 5);
  EXPECT_GT(dataRange({0, 1e-4, 1}, Scale::Log10).min, 0) << "non-positive values are ignored on log axes";
}

TEST(Interaction, ZoomKeepsTheAnchorAndPanShifts) {
  const Range r{0, 10};
  const Range z = zoomAround(r, Scale::Linear, 2, 0.5);
  EXPECT_DOUBLE_EQ(z.min, 1);
  EXPECT_DOUBLE_EQ(z.max, 6);
  const Range lz = zoomAround({1, 100}, Scale::Log10, 10, 0.5);
  EXPECT_NEAR(std::log10(lz.min), 0.5, 1e-12);
  EXPECT_NEAR(std::log10(lz.max), 1.5, 1e-12);
  const Range p = panBy(r, Scale::Linear, 0.25);
  EXPECT_DOUBLE_EQ(p.min, 2.5);
  EXPECT_DOUBLE_EQ(p.max, 12.5);
}

// A canvas that only measures text (layout needs it).
class MeasuringCanvas : public Canvas {
 public:
  void line(Point, Point, Rgb, float, bool) override { ++lines; }
  void polyline(std::span<const Point> p, Rgb, float, bool) override { points += p.size(); }
  void rect(Point, Point, Rgb, float) override {}
  void fillRect(Point, Point, Rgb, float) override { ++fills; }
  void fillQuad(Point, Point, Point, Point, Rgb, float) override { ++quads; }
  void circle(Point, float, Rgb) override { ++circles; }
  void columnBand(std::span<const ColumnSpan> c, Rgb, float) override { columns += c.size(); }
  void text(Point at, std::string_view t, Rgb, float, Align, Align, bool) override {
    texts.emplace_back(t);
    textAt.push_back(at);
  }
  Point textSize(std::string_view t, float s) override {
    return {0.6f * s * static_cast<float>(t.size()), s};
  }
  void heatmapCells(Point, Point, const Heatmap&) override { ++heatmaps; }
  void colorbar(Point, Point, Colormap) override {}
  void pushClip(Point, Point) override {}
  void popClip() override {}
  size_t lines = 0, points = 0, heatmaps = 0, fills = 0, quads = 0, circles = 0, columns = 0;
  std::vector<std::string> texts;
  std::vector<Point> textAt;
};

// Every text's box as drawn (its alignment resolved as Cairo and SVG resolve it), with MeasuringCanvas's
// monospace metrics.
class TextBoxes : public MeasuringCanvas {
 public:
  void text(Point at, std::string_view t, Rgb, float size, Align h, Align v, bool vertical) override {
    const Point s = textSize(t, size);
    const Point o = alignedTextOrigin(at, s, h, v, vertical);  // the contract Cairo and SVG draw by
    boxes.push_back({std::string(t), o, {o.x + (vertical ? s.y : s.x), o.y + (vertical ? s.x : s.y)}});
  }
  struct Box {
    std::string text;
    Point min, max;
  };
  std::vector<Box> boxes;
};

// DirectShare's 96 head labels ("L10h7") on a 600-pixel map: thinned to every k-th, never overlapping, still
// names (not numbers), and the first column always labelled.
TEST(Figures, HeatmapColumnLabelsAreThinnedSoTheyNeverOverlap) {
  Figure f;
  Heatmap h;
  h.rows = h.cols = 96;
  h.values.assign(96 * 96, 0.5f);
  for (int i = 0; i < 96; ++i) {
    h.colLabels.push_back("L" + std::to_string(i / 8) + "h" + std::to_string(i % 8));
    h.rowLabels.push_back(h.colLabels.back());
  }
  f.heatmap = h;
  MeasuringCanvas c;
  const Style style = Style::light();
  const FigureLayout layout = layoutFigure(f, c, style, {0, 0}, {600, 600});
  drawFigure(c, f, layout, style);
  std::vector<float> xs;
  for (size_t i = 0; i < c.texts.size(); ++i)
    if (std::find(h.colLabels.begin(), h.colLabels.end(), c.texts[i]) != h.colLabels.end() &&
        c.textAt[i].y > layout.plotMax.y)  // the x axis, below the plot
      xs.push_back(c.textAt[i].x);
  ASSERT_GE(xs.size(), 4u) << "labels are thinned, not dropped";
  EXPECT_LT(xs.size(), 96u) << "96 labels of ~6 characters cannot fit 600 pixels";
  std::sort(xs.begin(), xs.end());
  const float width = c.textSize("L10h7", style.fontSize).x;
  for (size_t i = 1; i < xs.size(); ++i)
    EXPECT_GT(xs[i] - xs[i - 1], width) << "labels " << i - 1 << " and " << i;
  EXPECT_TRUE(std::find(c.texts.begin(), c.texts.end(), "L0h0") != c.texts.end());
}

TEST(Figures, DecimationBoundsPointsAndKeepsSpikes) {
  Series s;
  for (int i = 0; i < 262144; ++i) {
    s.x.push_back(i);
    s.y.push_back(i == 100000 ? 50.0 : 1.0 + 0.001 * (i % 7));
  }
  Figure f;
  f.series.push_back(s);
  MeasuringCanvas c;
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {800, 500});
  const Trace trace = seriesTrace(s, l);
  ASSERT_TRUE(trace.dense());
  EXPECT_FALSE(trace.band) << "under a pixel of spread: a line, not a band";
  EXPECT_LE(trace.columns.size(), 800u + 2) << "one span per pixel column";
  const float spikeY = l.toPixel(100000, 50).y;
  EXPECT_TRUE(std::any_of(trace.columns.begin(), trace.columns.end(), [&](const ColumnSpan& col) {
    return std::abs(col.top - spikeY) < 0.5f;
  })) << "the spike survives decimation";
  EXPECT_TRUE(std::any_of(trace.points.begin(), trace.points.end(), [&](const Point& p) {
    return std::abs(p.y - spikeY) < 0.5f;
  })) << "and simplification";
  EXPECT_LT(trace.points.size(), 20u) << "a flat line with one spike is a handful of vertices";
  // Zoomed in, only the visible part is processed and no decimation is needed.
  const FigureLayout zoomed = layoutFigure(f, c, Style::light(), {0, 0}, {800, 500}, Range{1000, 1100});
  const Trace near = seriesTrace(s, zoomed);
  EXPECT_FALSE(near.dense());
  EXPECT_LE(near.points.size(), 103u);
}

// Keeps every polyline's points as well.
class RecordingCanvas : public MeasuringCanvas {
 public:
  void polyline(std::span<const Point> p, Rgb color, float width, bool dashed) override {
    MeasuringCanvas::polyline(p, color, width, dashed);
    lines.emplace_back(p.begin(), p.end());
  }
  void columnBand(std::span<const ColumnSpan> c, Rgb color, float width) override {
    MeasuringCanvas::columnBand(c, color, width);
    std::vector<Point> asPoints;  // each column as its top and bottom
    for (const ColumnSpan& col : c)
      asPoints.push_back({col.x, col.top}), asPoints.push_back({col.x, col.bottom});
    lines.push_back(std::move(asPoints));
  }
  std::vector<std::vector<Point>> lines;
};

bool sameDrawing(const RecordingCanvas& a, const RecordingCanvas& b) {
  auto samePoints = [](const std::vector<Point>& p, const std::vector<Point>& q) {
    return std::equal(p.begin(), p.end(), q.begin(), q.end(),
                      [](Point u, Point v) { return u.x == v.x && u.y == v.y; });
  };
  return a.texts == b.texts && samePoints(a.textAt, b.textAt) &&
         std::equal(a.lines.begin(), a.lines.end(), b.lines.begin(), b.lines.end(), samePoints);
}

// One frame of `f` drawn and recorded, through `memo` (bound first, as plotWidget does) or without one.
RecordingCanvas drawRecorded(const Figure& f, FigureMemo* memo, Point size,
                             const std::optional<Range>& xView = std::nullopt,
                             const std::vector<bool>& hidden = {}) {
  RecordingCanvas c;
  if (memo) memo->bind(f);
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, size, xView, std::nullopt, hidden, memo);
  drawFigure(c, f, l, Style::light(), hidden, memo);
  return c;
}

// The on-screen memo (app/plot/figure_memo.hpp) draws exactly what drawing without it draws, frame after
// frame, and reuses a result only while everything it was computed from is unchanged: checked against a
// memo-less drawing of the same figure after each change (a value edited in place, a zoom, a hidden series,
// a resize), with the count of recomputed results showing what was reused.
TEST(FigureMemo, DrawsWhatDrawingWithoutItDrawsAndRecomputesOnlyWhatAChangeTouches) {
  Figure f;
  f.yScale = Scale::Log10;
  std::mt19937 rng(5);
  std::lognormal_distribution<double> noise(0, 0.2);
  for (int r = 0; r < 3; ++r) {
    Series s;
    s.label = "run " + std::to_string(r);
    for (int i = 1; i <= 5000; ++i)
      s.x.push_back(i), s.y.push_back((2.0 + r) * std::pow(i, -0.2) * noise(rng));
    f.series.push_back(s);
  }
  FigureMemo memo;
  std::optional<Range> xView;
  std::vector<bool> hidden;
  Point size{640, 400};
  auto draw = [&](FigureMemo* m) { return drawRecorded(f, m, size, xView, hidden); };
  // `recomputed` results; `scanned` series' extents (each series' x and y apart) behind the ranges.
  auto checkFrame = [&](const char* what, size_t recomputed, size_t scanned) {
    const size_t before = memo.recomputed(), extentsBefore = memo.extentsScanned();
    EXPECT_TRUE(sameDrawing(draw(&memo), draw(nullptr))) << what;
    EXPECT_EQ(memo.recomputed() - before, recomputed) << what;
    EXPECT_EQ(memo.extentsScanned() - extentsBefore, scanned) << what;
  };
  checkFrame("the first frame: both ranges, the legend's corner, three lines", 6, 6);
  checkFrame("an unchanged frame: everything reused", 0, 0);
  f.series[1].y[2500] = 500;  // a spike, written into the same figure
  checkFrame("a value changed in place: that series' extents alone", 6, 2);
  xView = Range{1000, 2000};
  checkFrame("a zoom: the y range refits to it, the corner and the lines follow", 5, 3);
  hidden = {true, false, false};
  checkFrame("a hidden series: the y range, the corner and the two lines still shown", 4, 0);
  hidden = {};
  checkFrame("shown again: its y extent in this zoom was kept", 4, 0);
  f.series[2].dashed = true;  // a band is drawn as its path when dashed: traced again
  checkFrame("dashed: its line, the zoomed y range and the corner (its key changed), its extent", 3, 1);
  size = {500, 400};
  checkFrame("a resize: the corner and the three lines", 4, 0);
}

// A series whose builder gives it a revision is keyed on that, not on its values: a rebuilt series (a new
// revision) is drawn from its new values and alone traced again, and an unchanged revision reuses
// everything without reading the values.
TEST(FigureMemo, ASeriesWithARevisionIsKeyedOnIt) {
  Figure f;
  for (int r = 0; r < 2; ++r) {
    Series s;
    for (int i = 1; i <= 3000; ++i) s.x.push_back(i), s.y.push_back((1.0 + r) / i);
    s.revision = 100 + r;
    f.series.push_back(s);
  }
  FigureMemo memo;
  auto draw = [&](FigureMemo* m) { return drawRecorded(f, m, {500, 300}); };
  EXPECT_TRUE(sameDrawing(draw(&memo), draw(nullptr)));
  size_t before = memo.recomputed();
  draw(&memo);
  EXPECT_EQ(memo.recomputed(), before) << "the same revisions: all reused";
  f.series[0].y[10] = 100;  // the builder's contract broken on purpose: the values are not read
  draw(&memo);
  EXPECT_EQ(memo.recomputed(), before) << "the same revisions: still reused";
  f.series[1].y[1000] = 1.5;  // rebuilt: a new value (inside both ranges) under a new revision
  f.series[1].revision = 102;
  f.series[0].y[10] = 1.0 / 11;  // (and the first series as its revision says)
  before = memo.recomputed();
  EXPECT_TRUE(sameDrawing(draw(&memo), draw(nullptr))) << "drawn from the new values";
  EXPECT_EQ(memo.recomputed() - before, 3u) << "both ranges (refitted to the same) and the changed line only";
  const size_t extents = memo.extentsScanned(), shapes = memo.shapesFound();
  f.series[0].y[10] = 50, f.series[0].revision = 103;
  EXPECT_TRUE(sameDrawing(draw(&memo), draw(nullptr))) << "the y range grows to the new value";
  EXPECT_EQ(memo.extentsScanned() - extents, 2u) << "the changed series' x and y extents, not the other's";
  // Both lines are traced again on the grown y axis; only the changed one's shape is derived again.
  EXPECT_EQ(memo.shapesFound() - shapes, 1u) << "the changed series' shape, not the other's";
  // A point no longer drawable, the first of its column (a scan that does not check points would take it).
  f.series[0].y[0] = std::nan(""), f.series[0].revision = 104;
  EXPECT_TRUE(sameDrawing(draw(&memo), draw(nullptr))) << "the shape found again: the NaN is left out";
  EXPECT_EQ(memo.shapesFound() - shapes, 2u);
}

// Changes a multiply alone carries only upwards: sign flips (two of them cancel in plain word-wise FNV-1a)
// and powers of two, which differ only in a double's exponent bits. Each pair must hash apart, and a figure
// whose series is negated in place must be drawn from its new values.
TEST(FigureMemo, SignFlipsAndExponentOnlyChangesAreSeen) {
  auto hashOf = [](std::vector<double> v) { return WordHash().add(v).value(); };
  EXPECT_NE(hashOf({1, 2}), hashOf({-1, -2}));
  EXPECT_NE(hashOf({1, 2, 3, 4, 5, 6, 7, 8}), hashOf({-1, 2, 3, 4, -5, 6, 7, 8})) << "the same lane";
  EXPECT_NE(hashOf({1, 2, 3, 4}), hashOf({-1, -2, 3, 4})) << "two lanes";
  EXPECT_NE(hashOf({0.5, 0.25}), hashOf({2, 4}));
  EXPECT_NE(WordHash().add(std::vector<double>{1}).add(std::vector<double>{2}).value(),
            WordHash().add(std::vector<double>{-1}).add(std::vector<double>{-2}).value())
      << "one flip in each of two series";
  Figure f;
  Series s;
  s.x = {0, 1};
  s.y = {1, 2};
  f.series.push_back(s);
  FigureMemo memo;
  auto draw = [&](FigureMemo* m) { return drawRecorded(f, m, {400, 300}); };
  draw(&memo);
  f.series[0].y = {-1, -2};
  EXPECT_TRUE(sameDrawing(draw(&memo), draw(nullptr))) << "the negated series is drawn where it now is";
}

// Decimation keeps, per pixel column, exactly the extremes that drawing every point would reach: checked
// against FigureLayout::toPixel of all 60,000 points of a noisy curve on a log y axis, with points it cannot
// draw (NaN, and values <= 0 on the log axis; alone, a few columns' worth in a row) and without, on a linear
// x axis (columns found by galloping), zoomed, on a log x axis and with x out of order (each point's column).
TEST(Figures, DecimationKeepsEachColumnsExtremesOnALogAxis) {
  Series s;
  std::mt19937 rng(3);
  std::lognormal_distribution<double> noise(0, 0.3);
  for (int i = 0; i < 60000; ++i) {
    s.x.push_back(i + 1);
    const bool gap = (i >= 30000 && i < 30400) || i % 997 == 0;
    s.y.push_back(gap ? (i % 2 ? NAN : -1.0) : 3.0 * std::pow(i + 1.0, -0.2) * noise(rng));
  }
  auto check = [](const Series& s, Scale xScale, std::optional<Range> xView, const char* what) {
    SCOPED_TRACE(what);
    Figure f;
    f.xScale = xScale;
    f.yScale = Scale::Log10;
    f.series.push_back(s);
    MeasuringCanvas c;
    const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {700, 400}, xView);
    std::map<int, std::pair<float, float>> expected, got;  // column -> (top, bottom) pixel
    auto note = [](std::map<int, std::pair<float, float>>& m, Point p) {
      auto [it, fresh] = m.try_emplace(static_cast<int>(std::floor(p.x)), p.y, p.y);
      it->second = {std::min(it->second.first, p.y), std::max(it->second.second, p.y)};
    };
    for (size_t i = 0; i < s.x.size(); ++i)
      if (s.y[i] > 0 && s.x[i] >= l.x.range.min && s.x[i] <= l.x.range.max)
        note(expected, l.toPixel(s.x[i], s.y[i]));
    const Trace trace = seriesTrace(s, l);
    ASSERT_TRUE(trace.dense());
    for (const ColumnSpan& col : trace.columns) {
      EXPECT_EQ(col.x, std::floor(col.x) + 0.5f) << "each span sits at its column's centre";
      if (col.x < l.plotMin.x || col.x > l.plotMax.x) continue;  // a zoom's margin point beyond the edge
      note(got, {col.x, col.top});
      note(got, {col.x, col.bottom});
    }
    ASSERT_EQ(got.size(), expected.size());
    for (const auto& [column, extent] : expected) {
      EXPECT_NEAR(got[column].first, extent.first, 1e-3) << "column " << column;
      EXPECT_NEAR(got[column].second, extent.second, 1e-3) << "column " << column;
    }
  };
  check(s, Scale::Linear, std::nullopt, "linear x");
  check(s, Scale::Linear, Range{20000.5, 45000.5}, "linear x, zoomed");
  check(s, Scale::Log10, std::nullopt, "log x");
  Series whole = s;  // every point drawable: columns scanned without checking each point
  for (double& y : whole.y)
    if (!(y > 0)) y = 1.0;
  check(whole, Scale::Linear, std::nullopt, "every point drawable");
  check(whole, Scale::Linear, Range{20000.5, 45000.5}, "every point drawable, zoomed");
  Series shuffled = s;  // two points 25,000 steps (about 300 columns) apart swapped: x out of order
  std::swap(shuffled.x[100], shuffled.x[25100]), std::swap(shuffled.y[100], shuffled.y[25100]);
  check(shuffled, Scale::Linear, std::nullopt, "x out of order");
}

// Pixel coverage masks, for comparing what two ways of drawing reach.
struct Mask {
  int width = 0, height = 0;
  std::vector<uint8_t> on;
  size_t count() const { return static_cast<size_t>(std::count(on.begin(), on.end(), uint8_t{1})); }
  // |this and other| / |this|: how much of this mask the other covers.
  double coveredBy(const Mask& o) const {
    size_t both = 0;
    for (size_t i = 0; i < on.size(); ++i) both += on[i] && o.on[i];
    return static_cast<double>(both) / static_cast<double>(std::max<size_t>(1, count()));
  }
};

// What Cairo paints (alpha >= 1/2) on a width x height A8 surface.
Mask cairoMask(int width, int height, const std::function<void(cairo_t*)>& paint) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_A8, width, height);
  cairo_t* cr = cairo_create(surface);
  paint(cr);
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  Mask m{width, height, std::vector<uint8_t>(static_cast<size_t>(width * height))};
  const unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) m.on[static_cast<size_t>(y * width + x)] = data[y * stride + x] >= 128;
  cairo_surface_destroy(surface);
  return m;
}

// Every point of the series stroked as one polyline, by Cairo: what a dense line should look like.
Mask strokedEveryPoint(const Series& s, const FigureLayout& l, float width, int w, int h) {
  return cairoMask(w, h, [&](cairo_t* cr) {
    cairo_set_line_width(cr, width);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (size_t i = 0; i < s.x.size(); ++i) {
      const Point p = l.toPixel(s.x[i], s.y[i]);
      cairo_line_to(cr, p.x, p.y);
    }
    cairo_stroke(cr);
  });
}

Mask bandByCairo(std::span<const ColumnSpan> columns, float width, int w, int h) {
  return cairoMask(w, h, [&](cairo_t* cr) {
    sharelens::CairoCanvas(cr).columnBand(columns, {0, 0, 0}, width);
  });
}

// A dense line is drawn from its columns' extents: a noisy one as their band (Canvas::columnBand), a smooth
// one as a simplified line through them. Either must reach the pixels that stroking all of its points
// reaches, and little else: checked against Cairo stroking every one of 20,000 points, for a noisy loss
// curve 1 and 1.8 pixels wide and a smooth one 2 pixels wide.
TEST(Figures, ADenseLineCoversWhatStrokingEveryPointCovers) {
  std::mt19937 rng(11);
  std::lognormal_distribution<double> noise(0, 0.05);
  // (noisy, width): the Training view's raw curves are 1 px with smoothing and 1.8 px without (whose band
  // also reaches sideways where it is steep); its moving averages are 2 px.
  for (const auto& [noisy, width] : {std::pair{true, 1.0f}, std::pair{true, 1.8f}, std::pair{false, 2.0f}}) {
    Series s;
    for (int i = 1; i <= 20000; ++i) {
      s.x.push_back(i);
      s.y.push_back(2.0 * std::pow(i, -0.15) * (noisy ? noise(rng) : 1.0));
    }
    Figure f;
    f.series.push_back(s);
    MeasuringCanvas c;
    const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {700, 400});
    const Trace trace = seriesTrace(s, l);
    const std::string what = (noisy ? "noisy, " : "smooth, ") + std::to_string(width) + " px";
    ASSERT_TRUE(trace.dense()) << what;
    EXPECT_EQ(trace.band, noisy) << what;
    const Mask truth = strokedEveryPoint(s, l, width, 700, 400);
    const Mask drawn =
        trace.band ? bandByCairo(trace.columns, width, 700, 400) : cairoMask(700, 400, [&](cairo_t* cr) {
          sharelens::CairoCanvas(cr).polyline(trace.points, Rgb{0, 0, 0}, width, false);
        });
    if (!noisy) {
      EXPECT_LT(trace.points.size(), trace.columns.size() / 4) << "a smooth curve needs few vertices";
    }
    EXPECT_GT(truth.count(), 1000u) << what;
    EXPECT_GE(truth.coveredBy(drawn), 0.94)
        << what << ": what is drawn reaches what every point's stroke reaches";
    EXPECT_GE(drawn.coveredBy(truth), 0.90) << what << ": and paints little that the stroke leaves alone";
  }
}

// A dense stretch with nothing drawable (every value NaN, or every value <= 0 on a log axis) is an empty
// trace, drawn as nothing: not a crash.
TEST(Figures, ADenseStretchWithNothingDrawableIsAnEmptyTrace) {
  for (const bool logY : {false, true}) {
    Series s;
    for (int i = 1; i <= 5000; ++i) s.x.push_back(i), s.y.push_back(logY ? 0.0 : NAN);
    Figure f;
    f.yScale = logY ? Scale::Log10 : Scale::Linear;
    f.series.push_back(s);
    MeasuringCanvas c;
    const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {700, 400});
    const Trace trace = seriesTrace(s, l);
    EXPECT_FALSE(trace.dense()) << (logY ? "zeros on a log axis" : "NaN");
    EXPECT_TRUE(trace.points.empty());
    drawFigure(c, f, l, Style::light());
    EXPECT_EQ(c.columns + c.points, 0u);
  }
}

// ImGuiCanvas::columnBand's triangles (a strip, batched 16,384 columns at a time, past 65,536 vertices on a
// new vertex offset as with the GL backend) rasterised at pixel centres here, against the inside of the
// band's outline at the same centres: the same pixels, over 40,000 columns (three batches) of a wandering,
// jagged band.
TEST(Figures, TheScreensBandTrianglesFillTheBandsOutline) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini left in the working directory
  unsigned char* pixels = nullptr;
  int atlasW = 0, atlasH = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &atlasW, &atlasH);
  io.DisplaySize = {40000, 200};
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as imgui_impl_opengl3 sets it
  io.DeltaTime = 1.0f / 60;
  ImGui::NewFrame();
  ImDrawList* list = ImGui::GetForegroundDrawList();
  std::vector<ColumnSpan> columns;
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(0, 1);
  for (int x = 1; x < 40000; ++x) {
    const float centre = 100 + 60 * std::sin(static_cast<float>(x) / 300), spread = 20 * u(rng);
    // A quarter past each pixel's left edge: every pixel centre lies between two columns' vertices, inside
    // the quads joining them.
    columns.push_back({static_cast<float>(x) + 0.25f, centre - spread, centre + spread * u(rng)});
  }
  {
    TextureCache textures;
    ImGuiCanvas canvas(list, textures);
    canvas.columnBand(columns, {0, 0, 0}, 1.8f);
  }
  // Each triangle's alpha, interpolated, at the pixel centres it holds; a pixel keeps its largest.
  const int w = 40000, h = 200;
  std::vector<float> alpha(static_cast<size_t>(w * h), 0.0f);
  for (const ImDrawCmd& cmd : list->CmdBuffer)
    for (unsigned t = 0; t < cmd.ElemCount; t += 3) {
      const ImDrawVert* v[3];
      for (int k = 0; k < 3; ++k)
        v[k] = &list->VtxBuffer[static_cast<int>(cmd.VtxOffset +
                                                 list->IdxBuffer[static_cast<int>(cmd.IdxOffset + t + k)])];
      const float x0 = std::min({v[0]->pos.x, v[1]->pos.x, v[2]->pos.x}),
                  x1 = std::max({v[0]->pos.x, v[1]->pos.x, v[2]->pos.x});
      const float y0 = std::min({v[0]->pos.y, v[1]->pos.y, v[2]->pos.y}),
                  y1 = std::max({v[0]->pos.y, v[1]->pos.y, v[2]->pos.y});
      const float area = (v[1]->pos.x - v[0]->pos.x) * (v[2]->pos.y - v[0]->pos.y) -
                         (v[2]->pos.x - v[0]->pos.x) * (v[1]->pos.y - v[0]->pos.y);
      if (area == 0) continue;
      for (int py = std::max(0, static_cast<int>(y0)); py <= std::min(h - 1, static_cast<int>(y1)); ++py)
        for (int px = std::max(0, static_cast<int>(x0)); px <= std::min(w - 1, static_cast<int>(x1)); ++px) {
          const float cx = static_cast<float>(px) + 0.5f, cy = static_cast<float>(py) + 0.5f;
          float b[3];
          for (int k = 0; k < 3; ++k) {
            const ImVec2 p = v[(k + 1) % 3]->pos, q = v[(k + 2) % 3]->pos;
            b[k] = ((q.x - p.x) * (cy - p.y) - (cx - p.x) * (q.y - p.y)) / area;
          }
          if (b[0] < -1e-5f || b[1] < -1e-5f || b[2] < -1e-5f) continue;
          float a = 0;
          for (int k = 0; k < 3; ++k)
            a += b[k] * static_cast<float>(v[k]->col >> IM_COL32_A_SHIFT & 0xff) / 255;
          float& at = alpha[static_cast<size_t>(py * w + px)];
          at = std::max(at, a);
        }
    }
  ImGui::EndFrame();
  ImGui::DestroyContext();
  Mask screen{w, h, std::vector<uint8_t>(alpha.size())};
  for (size_t i = 0; i < alpha.size(); ++i) screen.on[i] = alpha[i] >= 0.5f;
  // The outline's inside at each pixel centre: its top and bottom interpolated between the two outline
  // vertices around the centre's x. A centre within 1/100 pixel of an edge could fall either way in float
  // arithmetic and is not compared.
  const std::vector<ColumnSpan> edge = bandOutline(columns, 1.8f);
  Mask outline{w, h, std::vector<uint8_t>(alpha.size())};
  std::vector<uint8_t> onEdge(alpha.size(), 0);
  for (size_t k = 0; k + 1 < edge.size(); ++k)
    for (int px = static_cast<int>(std::ceil(edge[k].x - 0.5f));
         static_cast<float>(px) + 0.5f < edge[k + 1].x; ++px) {
      const float t = (static_cast<float>(px) + 0.5f - edge[k].x) / (edge[k + 1].x - edge[k].x);
      const float top = edge[k].top + t * (edge[k + 1].top - edge[k].top);
      const float bottom = edge[k].bottom + t * (edge[k + 1].bottom - edge[k].bottom);
      for (int py = 0; py < h; ++py) {
        const float cy = static_cast<float>(py) + 0.5f;
        const auto i = static_cast<size_t>(py * w + px);
        outline.on[i] = cy >= top && cy <= bottom;
        onEdge[i] = std::abs(cy - top) < 0.01f || std::abs(cy - bottom) < 0.01f;
      }
    }
  EXPECT_GT(outline.count(), 400000u);
  size_t differing = 0;
  for (size_t i = 0; i < alpha.size(); ++i) differing += !onEdge[i] && screen.on[i] != outline.on[i];
  EXPECT_EQ(differing, 0u) << "of " << outline.count() << " pixels inside";
}

// A picture's opening rectangle is cleared into its pixels instead of drawn only when drawing it over a clear
// framebuffer would leave every pixel its scissor box lets it draw that colour: opaque, untextured, over the
// whole box, and the list's first shape. The pixels are the box's, rows counted upwards as GL counts them.
TEST(ListRenderer, OnlyAnOpaqueUntexturedRectangleOverItsWholeScissorBoxIsAnOpeningFill) {
  ImDrawListSharedData shared;
  shared.TexUvWhitePixel = {0.25f, 0.5f};
  shared.SetCircleTessellationMaxError(0.3f);  // ImGui's default style: arcs (rounded corners) are tabled
  const auto white = reinterpret_cast<ImTextureID>(intptr_t{7});
  const ImU32 background = IM_COL32(28, 28, 32, 255);
  // A 100 x 60 figure at (10, 20), in pixels of scale 2: a 200 x 120 framebuffer.
  const ImVec2 origin{10, 20}, scale{2, 2};
  const int width = 200, height = 120;
  auto fill = [&](const std::function<void(ImDrawList&)>& draw, ImVec2 clipMin = {10, 20},
                  ImVec2 clipMax = {110, 80}, intptr_t textureName = 7) {
    const auto texture = reinterpret_cast<ImTextureID>(textureName);
    ImDrawList list(&shared);
    list._ResetForNewFrame();
    list.PushTextureID(texture);
    list.PushClipRect(clipMin, clipMax);
    draw(list);
    list.AddLine({20, 30}, {90, 70}, IM_COL32(255, 0, 0, 255), 2);  // the figure's content, drawn over it
    list._PopUnusedDrawCmd();
    return openingFill(list.VtxBuffer, list.IdxBuffer, list.CmdBuffer, origin, scale, width, height, white,
                       shared.TexUvWhitePixel);
  };
  auto box = [&](ImVec2 min, ImVec2 max, ImU32 color) {
    return [=](ImDrawList& l) { l.AddRectFilled(min, max, color); };
  };
  auto fills = [&](const std::optional<OpeningFill>& f, ScissorBox pixels) {
    if (!f) return ::testing::AssertionFailure() << "no opening fill";
    if (f->color != background) return ::testing::AssertionFailure() << "colour " << f->color;
    const ScissorBox p = f->pixels;
    if (p.x != pixels.x || p.y != pixels.y || p.width != pixels.width || p.height != pixels.height)
      return ::testing::AssertionFailure()
             << "pixels " << p.x << ", " << p.y << " of " << p.width << " x " << p.height;
    return ::testing::AssertionSuccess();
  };
  const ScissorBox all{0, 0, width, height};
  EXPECT_TRUE(fills(fill(box({10, 20}, {110, 80}, background)), all)) << "exactly the framebuffer";
  EXPECT_TRUE(fills(fill(box({0, 0}, {200, 200}, background)), all)) << "past its edges";
  EXPECT_TRUE(fills(fill(box({10, 20}, {110, 80}, background), {0, 0}, {500, 500}), all))
      << "a clip past the framebuffer: only its pixels count";
  EXPECT_TRUE(
      fills(fill(box({10, 20}, {110, 80}, background), {10, 20}, {109.75f, 79.75f}), {0, 0, 199, 119}))
      << "clipped inside the last column and row: the box ImGui's backend would scissor (truncated to whole "
         "pixels, from the bottom up), the rest stays clear";
  EXPECT_TRUE(fills(fill(box({10, 20}, {110, 70}, background), {10, 20}, {110, 70}), {0, 20, 200, 100}))
      << "the clip's and the rectangle's edges together";
  EXPECT_FALSE(fill(box({10, 20}, {110, 79.75f}, background), {10, 20}, {110, 79.75f}))
      << "ending on the last row's centre (79.75, in the box): whether GL draws that row is its edge rule's";
  EXPECT_FALSE(fill(box({10.5f, 20}, {110, 80}, background))) << "the first column's centre (10.25) left out";
  EXPECT_FALSE(fill(box({10, 20}, {110, 79.9f}, background)))
      << "ending inside the last row: it covers that row's centre (79.75), but only whole pixels are certain";
  EXPECT_FALSE(fill(box({10, 20}, {110, 80}, IM_COL32(28, 28, 32, 254)))) << "not opaque";
  EXPECT_FALSE(fill(box({10, 20}, {110, 80}, background), {10, 20}, {110, 80}, /*textureName=*/8))
      << "another texture";
  EXPECT_FALSE(fill([&](ImDrawList& l) {
    l.AddRectFilled({10, 20}, {110, 80}, background, 4.0f);
  })) << "rounded corners";
  EXPECT_FALSE(fill([&](ImDrawList& l) {
    l.PrimReserve(6, 4);
    l.PrimRectUV({10, 20}, {110, 80}, {0, 0}, {1, 1}, background);
  })) << "textured";
  EXPECT_FALSE(fill([&](ImDrawList& l) {
    l.AddRectFilledMultiColor({10, 20}, {110, 80}, background, background, IM_COL32(0, 0, 0, 255),
                              background);
  })) << "corners of other colours";
  EXPECT_FALSE(fill([&](ImDrawList&) {})) << "a line first";
  EXPECT_FALSE(fill([&](ImDrawList& l) {
    l.AddTriangleFilled({10, 20}, {110, 20}, {110, 80}, background);
    l.AddTriangleFilled({10, 20}, {110, 80}, {10, 80}, background);
  })) << "two triangles covering it are not ImGui's rectangle: only that is recognised";
}

// A topology's block map is categorical: each block its own palette colour and a named swatch, not a
// position on a 0-1 colour bar (Cycle (Rev) at L = 12, U = 4: 0 1 2 3 0 1 2 3 3 2 1 0).
TEST(Figures, TopologyBlocksAreCategoriesWithTheirOwnColours) {
  Topology t = debugTopology();
  resizeLayers(t, 12);
  applyPattern(t, SharingPattern::CycleRev, 4);
  const Figure f = topologyFigure(t);
  ASSERT_TRUE(f.heatmap.has_value());
  const Heatmap& h = *f.heatmap;
  EXPECT_EQ(h.categories, (std::vector<std::string>{"block 0", "block 1", "block 2", "block 3"}));
  const int expected[] = {0, 1, 2, 3, 0, 1, 2, 3, 3, 2, 1, 0};
  for (int l = 0; l < 12; ++l) {
    EXPECT_EQ(h.at(l, 0), static_cast<float>(expected[l])) << "layer " << l;
    const Rgb c = heatmapCellColor(h, h.at(l, 0)), want = seriesColor(expected[l]);
    EXPECT_TRUE(c.r == want.r && c.g == want.g && c.b == want.b) << "layer " << l;
  }
  // More blocks than the palette has colours: still one distinct colour each (spread over the colormap).
  Heatmap many;
  many.categories = std::vector<std::string>(14, "b");
  std::set<std::tuple<int, int, int>> colours;
  for (int i = 0; i < 14; ++i) {
    const Rgb c = heatmapCellColor(many, static_cast<float>(i));
    colours.insert({c.r, c.g, c.b});
  }
  EXPECT_EQ(colours.size(), 14u);
  const Rgb grey = heatmapCellColor(h, NAN), outside = heatmapCellColor(h, 9.0f);
  EXPECT_TRUE(grey.r == outside.r && grey.g == outside.g && grey.b == outside.b) << "no such block: grey";
  MeasuringCanvas c;  // the legend names every block; no colour-bar ticks
  drawFigure(c, f, layoutFigure(f, c, Style::light(), {0, 0}, {600, 500}), Style::light());
  for (const char* name : {"block 0", "block 3", "unique block"})
    EXPECT_TRUE(std::find(c.texts.begin(), c.texts.end(), name) != c.texts.end()) << name;
}

// Zoomed on x, y refits to the points in view (y = x^2 over 0..100: x in [10, 20] gives y in [100, 400]);
// a zoom with nothing in view keeps the whole data's range.
TEST(Figures, YRefitsToTheVisibleXRange) {
  Series s;
  for (int i = 0; i <= 100; ++i) s.x.push_back(i), s.y.push_back(static_cast<double>(i) * i);
  Figure f;
  f.series.push_back(s);
  const Range visible = fittedYRange(f, {}, Range{10, 20});
  EXPECT_NEAR(visible.min, 100 - 0.05 * 300, 1e-9);
  EXPECT_NEAR(visible.max, 400 + 0.05 * 300, 1e-9);
  const Range all = fittedYRange(f), none = fittedYRange(f, {}, Range{200, 300});
  EXPECT_DOUBLE_EQ(none.min, all.min);
  EXPECT_DOUBLE_EQ(none.max, all.max);
  MeasuringCanvas c;  // and the layout uses it when only x is zoomed
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {600, 400}, Range{10, 20});
  EXPECT_NEAR(l.y.range.max, visible.max, 1e-9);
}

// No point of any segment, as drawn (straight in pixels), inside the legend's frame (drawn 3 px above and
// below its rows).
void expectLegendClearOfLines(const Figure& f, const FigureLayout& l) {
  ASSERT_FALSE(l.legend.empty());
  const Point min{l.legend.front().min.x, l.legend.front().min.y - 3},
      max{l.legend.back().max.x, l.legend.back().max.y + 3};
  for (const Series& s : f.series)
    for (size_t k = 0; k + 1 < s.x.size(); ++k) {
      if (!std::isfinite(s.x[k]) || !std::isfinite(s.x[k + 1])) continue;
      const Point a = l.toPixel(s.x[k], s.y[k]), b = l.toPixel(s.x[k + 1], s.y[k + 1]);
      for (int i = 0; i <= 1000; ++i) {
        const float t = static_cast<float>(i) / 1000;
        const Point p{a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)};
        ASSERT_FALSE(p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y)
            << "the legend covers the line at (" << p.x << ", " << p.y << ")";
      }
    }
}

// The README's cost-growth figure: two rising lines of three points each. The legend's corner was chosen by
// the points alone, so the top-right box, holding no point, sat on both lines.
TEST(Figures, TheLegendAvoidsTheLinesBetweenSparsePoints) {
  Figure f;
  f.xScale = f.yScale = Scale::Log10;
  const std::vector<std::vector<double>> ys = {{67.0, 582.7, 1329.9}, {16.8, 121.9, 439.8}};
  for (const auto& y : ys) {
    Series s;
    s.label = "a side";
    s.style = SeriesStyle::LineAndMarkers;
    s.x = {124.4, 354.8, 1235.8};
    s.y = y;
    f.series.push_back(s);
  }
  MeasuringCanvas c;
  expectLegendClearOfLines(f, layoutFigure(f, c, Style::light(), {0, 0}, {520, 500}));
}

// Error bars count as what they cover: a bar figure's legend sat on the error bars above its bars (one
// column, issue 41 item 6), since only the points were counted. A marker at mid-height on the right whose
// interval spans nearly the whole height takes both right corners; the legend goes left.
TEST(Figures, TheLegendAvoidsErrorBars) {
  Figure f;
  f.xRange = Range{0, 10}, f.yRange = Range{0, 10};
  Series tall, low;
  tall.label = "wide", tall.style = SeriesStyle::Markers;
  tall.x = {9}, tall.y = {5}, tall.error = {4.6};
  low.label = "low", low.style = SeriesStyle::Markers;
  low.x = {1}, low.y = {0.5};
  f.series = {tall, low};
  MeasuringCanvas c;
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {520, 400});
  ASSERT_EQ(l.legend.size(), 2u);
  EXPECT_LT(l.legend[0].max.x, (l.plotMin.x + l.plotMax.x) / 2) << "left, clear of the interval";
  EXPECT_LT(l.legend[0].max.y, (l.plotMin.y + l.plotMax.y) / 2) << "top, clear of the low point";

  // Bars count by their bodies, not their tops: short bars on the right leave no top in the lower corners but
  // fill them; a tall bar fills the top left, one point sits in the top right. The legend goes top right.
  Figure bars;
  bars.xRange = Range{-0.5, 3.5}, bars.yRange = Range{0, 10};
  Series body, point;
  body.label = "bars", body.style = SeriesStyle::Bars;
  body.x = {0, 1, 2, 3}, body.y = {9.5, 3, 3, 3};
  point.label = "a point", point.style = SeriesStyle::Markers;
  point.x = {3}, point.y = {9.5};
  bars.series = {body, point};
  const FigureLayout b = layoutFigure(bars, c, Style::light(), {0, 0}, {520, 400});
  ASSERT_EQ(b.legend.size(), 2u);
  EXPECT_LT(b.legend[0].max.y, (b.plotMin.y + b.plotMax.y) / 2) << "not over the bars' bodies below";
  EXPECT_GT(b.legend[0].min.x, (b.plotMin.x + b.plotMax.x) / 2) << "right, clear of the tall bar";
}

// A zigzag of 120 points in the lower half, ending in a climb out through the top-right corner to a point
// above the view: the segment samples are spread over the whole line, not spent on its first segments (no
// point lies in that corner); a point with no x is left out, not sampled.
TEST(Figures, TheLegendSeesTheWholeOfALongJaggedLine) {
  Series s;
  s.label = "zigzag";
  for (int i = 0; i < 120; ++i) s.x.push_back(i), s.y.push_back(i % 2 == 0 ? 0.0 : 0.45);
  s.x.push_back(NAN), s.y.push_back(0.5);
  s.x.push_back(130), s.y.push_back(1.0);
  Series low;  // keeps the bottom corners taken
  low.label = "floor";
  low.style = SeriesStyle::Markers;
  for (int i = 0; i <= 130; ++i) low.x.push_back(i), low.y.push_back(0.02);
  Figure f;
  f.series = {s, low};
  f.yRange = Range{0, 0.8};
  MeasuringCanvas c;
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {600, 400});
  expectLegendClearOfLines(f, l);
  EXPECT_LT(l.legend.front().min.x, (l.plotMin.x + l.plotMax.x) / 2) << "top left: the one corner left";
}

// A noisy loss of 20,000 points is traced as pixel columns (seriesTrace); the legend counts each column's
// points where its span meets a corner. The dense series fills the top right and the bottom left; three
// markers sit in the top left and five in the bottom right: the top left holds the fewest points. Counting
// no columns would pick the top right; counting a column wherever it lies in a corner's x range would tie
// the top right with the bottom left.
TEST(Figures, TheLegendCountsADenseSeriesByTheColumnsItIsDrawnAs) {
  Series dense;
  dense.label = "dense";
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> noise(-0.05, 0.05);
  for (int i = 1; i <= 20000; ++i)
    dense.x.push_back(i), dense.y.push_back((i <= 10000 ? 0.1 : 0.9) + noise(rng));
  Series few;
  few.label = "few";
  few.style = SeriesStyle::Markers;
  for (const auto& [x, y] : std::vector<std::pair<double, double>>{{500, 0.92},
                                                                   {700, 0.95},
                                                                   {900, 0.9},
                                                                   {19000, 0.1},
                                                                   {19200, 0.12},
                                                                   {19400, 0.08},
                                                                   {19600, 0.1},
                                                                   {19800, 0.11}})
    few.x.push_back(x), few.y.push_back(y);
  Figure f;
  f.series = {dense, few};
  f.yRange = Range{0, 1};
  MeasuringCanvas c;
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {600, 400});
  ASSERT_TRUE(seriesTrace(f.series[0], l).dense()) << "the case under test: a series traced as columns";
  ASSERT_FALSE(l.legend.empty());
  const float midX = (l.plotMin.x + l.plotMax.x) / 2, midY = (l.plotMin.y + l.plotMax.y) / 2;
  EXPECT_LT(l.legend.front().min.x, midX);
  EXPECT_LT(l.legend.front().min.y, midY) << "top left";
  FigureMemo memo;  // the same corner with the traces kept by a memo
  memo.bind(f);
  const FigureLayout kept =
      layoutFigure(f, c, Style::light(), {0, 0}, {600, 400}, std::nullopt, std::nullopt, {}, &memo);
  ASSERT_FALSE(kept.legend.empty());
  EXPECT_EQ(kept.legend.front().min.x, l.legend.front().min.x);
  EXPECT_EQ(kept.legend.front().min.y, l.legend.front().min.y);
}

// A legend names what the plot shows: a series without points (a run's validation curve before its first
// evaluation) gets no row, and a figure of such series alone no legend.
TEST(Figures, ASeriesWithoutPointsHasNoLegendRow) {
  Series a{.label = "run 1 validation"}, b{.label = "run 2 validation", .color = {230, 159, 0}};
  Figure f;
  f.series = {a, b};
  MeasuringCanvas c;
  EXPECT_TRUE(layoutFigure(f, c, Style::light(), {0, 0}, {600, 400}).legend.empty()) << "no data, no legend";
  f.series[1].x = {1, 2}, f.series[1].y = {3.1, 2.9};
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {600, 400});
  ASSERT_EQ(l.legend.size(), 1u);
  EXPECT_EQ(l.legend[0].series, 1u) << "the row names the series with points";
}

// A dense series with a gap: the columns of steps 1-10,000 high on the left, then the last steps at the
// right edge, with the band drawn across the gap along the top, through the top-right corner, which holds
// no column. Three markers in each bottom corner: the bridged top right counts its samples along the gap
// (about one every 6 px), more than three, so the legend goes to the bottom right (without the gap's
// samples, the top right would count nothing).
TEST(Figures, TheLegendCountsWhatADenseSeriesDrawsAcrossAGap) {
  Series dense;
  dense.label = "dense";
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  for (int i = 1; i <= 10000; ++i) dense.x.push_back(i), dense.y.push_back(0.95 + noise(rng));
  for (int i = 19990; i <= 20000; ++i) dense.x.push_back(i), dense.y.push_back(0.95);
  Series few;
  few.label = "few";
  few.style = SeriesStyle::Markers;
  for (const double x : {100.0, 300.0, 500.0, 19500.0, 19700.0, 19900.0})
    few.x.push_back(x), few.y.push_back(0.03);
  Figure f;
  f.series = {dense, few};
  f.xRange = Range{0, 20000};
  f.yRange = Range{0, 1};
  MeasuringCanvas c;
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {600, 400});
  const Trace t = seriesTrace(f.series[0], l);
  ASSERT_TRUE(t.dense()) << "the case under test";
  float widestGap = 0;
  for (size_t k = 1; k < t.columns.size(); ++k)
    widestGap = std::max(widestGap, t.columns[k].x - t.columns[k - 1].x);
  ASSERT_GT(widestGap, 150) << "a gap across the top right";
  ASSERT_FALSE(l.legend.empty());
  EXPECT_GT(l.legend.front().min.x, (l.plotMin.x + l.plotMax.x) / 2);
  EXPECT_GT(l.legend.front().min.y, (l.plotMin.y + l.plotMax.y) / 2) << "bottom right";
}

// A series of markers alone is drawn whatever its size: each point while sparse, each column's two extremes
// while dense, and past 1,000 columns (where markers touch) the band they cover. Over a line, so many
// markers are left out.
TEST(Figures, MarkersAloneAreAlwaysDrawn) {
  for (const auto& [points, width] : {std::pair{2500, 1400.0f}, std::pair{40000, 1400.0f}}) {
    for (const SeriesStyle style : {SeriesStyle::Markers, SeriesStyle::LineAndMarkers}) {
      Series s;
      s.style = style;
      for (int i = 0; i < points; ++i) s.x.push_back(i), s.y.push_back(std::sin(i * 0.01));
      Figure f;
      f.series = {s};
      f.legend = false;
      MeasuringCanvas c;
      const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {width, 400});
      const Trace t = seriesTrace(s, l);
      drawFigure(c, f, l, Style::light());
      const std::string what = std::to_string(points) + " points, " +
                               (style == SeriesStyle::Markers ? "markers alone" : "over a line");
      if (style == SeriesStyle::LineAndMarkers) {
        EXPECT_EQ(c.circles, 0u) << what;
        continue;
      }
      if (!t.dense()) {
        ASSERT_GE(t.points.size(), 2000u) << what << ": the case under test";
        EXPECT_EQ(c.circles, t.points.size()) << what;
      } else {
        ASSERT_GE(t.columns.size(), 1000u) << what << ": the case under test";
        EXPECT_EQ(c.columns, t.columns.size()) << what << ": the band of the columns";
      }
    }
  }
}

TEST(Figures, MovingAverageIsDebiased) {
  const auto ema = exponentialMovingAverage({4, 4, 4}, 0.9);
  for (double v : ema) EXPECT_NEAR(v, 4.0, 1e-12) << "a constant stays constant from the first point";
  const auto steps = exponentialMovingAverage({0, 10}, 0.5);
  EXPECT_NEAR(steps[1], (0.5 * 0.5 * 0 + 0.5 * 10) / (1 - 0.25), 1e-12);
  EXPECT_TRUE(std::isnan(exponentialMovingAverage({1, NAN}, 0.5)[1]));
}

TEST(Figures, KlDriftMarksEachCutOnTheDriftPointThatMadeIt) {
  // Five layers, drift between consecutive ones; kl:3 cuts after the two largest (layers 1 and 3), so the
  // markers stand on drift points 1 and 3, and the subtitle names the rule and the lens.
  ActivationResults a;
  a.layers = 5;
  a.klDrift = {0.10, 0.50, 0.05, 0.30};
  a.klGroupCount = 3;
  a.logitLens = "mean-state";
  a.logitLensTokens = 2048;
  a.groups = groupsFromKlDrift(a.klDrift, a.layers, a.klGroupCount);
  ASSERT_EQ(a.groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4}}));
  const Figure f = klDriftFigure(a);
  ASSERT_EQ(f.markers.size(), 2u);
  EXPECT_EQ(f.markers[0].x, 1);
  EXPECT_EQ(f.markers[1].x, 3);
  EXPECT_EQ(f.markers[1].label, "group 2 from layer 4");
  EXPECT_NE(f.subtitle.find("cut after the 2 largest drifts"), std::string::npos) << f.subtitle;
  EXPECT_NE(f.subtitle.find("mean-state lens over 2048 tokens"), std::string::npos) << f.subtitle;
  a.klGroupCount = 0;
  EXPECT_NE(klDriftFigure(a).subtitle.find("split after each local maximum"), std::string::npos);
}

// An experiment's bar chart says over how many seeds each interval is, and that one seed has none.
TEST(Figures, ExperimentBarsSayHowManySeedsEachIntervalHas) {
  ExperimentReport r;
  r.experiment.name = "tiny";
  r.experiment.seeds = {1, 2, 3};
  for (const auto& [name, sample] :
       {std::pair<std::string, std::vector<double>>{"shared", {5.0, 5.2, 5.1}}, {"baseline", {4.9}}}) {
    ArmSummary a;
    a.name = name;
    a.nll = meanInterval(sample);
    r.arms.push_back(a);
  }
  Figure f = experimentBarsFigure(r);
  EXPECT_NE(f.title.find("the seeds each arm finished (of 3)"), std::string::npos) << f.title;
  EXPECT_EQ(f.series[0].label, "shared (3 seeds)");
  EXPECT_EQ(f.series[1].label, "baseline (1 seed, no interval)");
  EXPECT_EQ(f.series[1].error, std::vector<double>{0.0});
  r.arms[1].nll = meanInterval(std::vector<double>{4.9, 5.0, 4.8});
  f = experimentBarsFigure(r);
  EXPECT_NE(f.title.find("over 3 seeds"), std::string::npos) << f.title;
  EXPECT_EQ(f.series[1].label, "baseline");
}

// An experiment's report with the arms a forest plot shows: "shared", the reference "baseline" and its A/A
// arm "baseline-aa", their numbers left for the test to fill.
ExperimentReport forestReport(const std::string& name) {
  ExperimentReport r;
  r.experiment.name = name;
  r.experiment.reference = "baseline";
  for (const char* name : {"shared", "baseline", "baseline-aa"}) {
    ArmSummary a;
    a.name = name;
    r.arms.push_back(a);
  }
  return r;
}

// The forest plot (issue 35) draws the comparison itself: per arm but the reference, the paired difference
// with its seed interval, the document interval beside it (its own bounds), zero, a no-worse arm's margin
// across its column only, and the paper's difference where given; the A/A arm is labelled as such.
TEST(Figures, ExperimentForestDrawsPairedDifferencesAgainstZeroTheMarginAndThePaper) {
  ExperimentReport r = forestReport("tiny");
  r.arms[0].difference = meanInterval(std::vector<double>{0.01, 0.03, 0.02});  // 0.02 +- 0.0248
  r.arms[0].documentDifference = {
      .estimate = 0.02, .lo = 0.005, .hi = 0.045, .clusters = 40, .resamples = 2000};
  r.arms[0].expect = "no-worse";
  r.arms[0].margin = 0.02;
  r.arms[0].paperEffect = -0.022;
  r.arms[2].aaOf = "baseline";
  r.arms[2].difference = meanInterval(std::vector<double>{-0.01, 0.0, 0.01});
  const Figure f = experimentForestFigure(r);
  EXPECT_EQ(f.xCategories, (std::vector<std::string>{"shared", "baseline-aa (A/A)"}));
  auto series = [&](const std::string& label) -> const Series& {
    for (const Series& s : f.series)
      if (s.label == label) return s;
    ADD_FAILURE() << "no series " << label;
    return f.series.front();
  };
  const Series& seeds = series("over seeds (t)");
  EXPECT_EQ(seeds.x, (std::vector<double>{0, 1}));
  EXPECT_NEAR(seeds.y[0], 0.02, 1e-12);
  EXPECT_NEAR(seeds.error[0], 4.302653 * 0.01 / std::sqrt(3.0), 1e-6);
  const Series& documents = series("over held-out documents (bootstrap)");
  ASSERT_EQ(documents.x.size(), 1u) << "only the arm with a document interval";
  EXPECT_NEAR(documents.y[0] - documents.error[0], 0.005, 1e-12);
  EXPECT_NEAR(documents.y[0] + documents.error[0], 0.045, 1e-12);
  EXPECT_EQ(series("the paper's difference").y, std::vector<double>{-0.022});
  const Series& margin = series("no-worse margin");
  EXPECT_EQ(margin.x[0], -0.4);
  EXPECT_EQ(margin.x[1], 0.4);
  EXPECT_EQ(margin.y[0], 0.02);
  EXPECT_EQ(series("no difference").y, (std::vector<double>{0, 0}));
}

// Issue 41 items 6 and 7: the effective-rank markers of spectra whose ranks coincide (or nearly) carry their
// "r95%" labels one above the other, never overlapping; the threshold reads as it is ("r90.4%" for 0.904,
// never rounded to "r90%"); the spectrum is on a log axis unless asked linear (the view's "log y", export's
// --linear-y).
TEST(Figures, RankMarkersAtCoincidingRanksStackTheirUnroundedLabels) {
  EXPECT_EQ(percentText(0.95), "95%");
  EXPECT_EQ(percentText(0.904), "90.4%");
  EXPECT_EQ(percentText(0.9996), "99.96%");
  std::vector<MatrixSpectrum> spectra(3, MatrixSpectrum{{"layers.0.q"}, {}});
  for (size_t i = 0; i < spectra.size(); ++i) {
    spectra[i].id.name = "layers." + std::to_string(i) + ".q";
    spectra[i].spectrum.sigma = {4, 2, 1, 0.5, 0.25};
    spectra[i].spectrum.effectiveRank = i == 2 ? 3 : 2;  // two coincide, the third is one rank away
    spectra[i].spectrum.threshold = 0.904;
  }
  const Figure f = spectrumFigure({&spectra[0], &spectra[1], &spectra[2]}, true, "S");
  ASSERT_EQ(f.markers.size(), 3u);
  for (const Marker& m : f.markers) EXPECT_EQ(m.label, "r90.4%");
  EXPECT_EQ(f.yScale, Scale::Log10);
  EXPECT_EQ(spectrumFigure({&spectra[0]}, true, "S", /*logY=*/false).yScale, Scale::Linear);
  TextBoxes c;
  const Style style = Style::light();
  const FigureLayout l = layoutFigure(f, c, style, {0, 0}, {260, 200});  // ranks 2 and 3 a few pixels apart
  drawFigure(c, f, l, style);
  std::vector<TextBoxes::Box> labels;
  for (const TextBoxes::Box& b : c.boxes)
    if (b.text == "r90.4%") labels.push_back(b);
  ASSERT_EQ(labels.size(), 3u);
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = i + 1; j < labels.size(); ++j) {
      const TextBoxes::Box &a = labels[i], &b = labels[j];
      const bool overlap = a.min.x < b.max.x && b.min.x < a.max.x && a.min.y < b.max.y && b.min.y < a.max.y;
      EXPECT_FALSE(overlap) << "labels " << i << " and " << j << " overlap";
    }
}

TEST(Figures, BuildersCarryTitlesMarkersAndLabels) {
  MatrixSpectrum m{{"layers.0.q"}, {}};
  m.spectrum.sigma = {4, 2, 1};
  m.spectrum.effectiveRank = 2;
  const Figure spectrum = spectrumFigure({&m}, true, "S");
  ASSERT_EQ(spectrum.series.size(), 1u);
  EXPECT_EQ(spectrum.series[0].y, (std::vector<double>{1, 0.5, 0.25}));
  EXPECT_EQ(spectrum.markers.at(0).x, 2);
  EXPECT_EQ(spectrum.yScale, Scale::Log10);

  HeadDiffLayer layer;
  layer.layer = 3;
  layer.labels = {"q0", "q1", "k0"};
  layer.map.n = 3;
  layer.map.rank = {0, 5, 7, 5, 0, 6, 7, 6, 0};
  layer.map.relativeDifference.assign(9, 0.5f);
  const Figure heads = headDifferenceFigure(layer, 0.95, Colormap::Magma);
  ASSERT_TRUE(heads.heatmap);
  EXPECT_EQ(heads.heatmap->vmax, 7);
  EXPECT_TRUE(std::isnan(heads.heatmap->at(1, 1))) << "the trivial diagonal is blank";
  EXPECT_EQ(heads.heatmap->colLabels[2], "k0");
  // One projection's heads: its block of the map, and colours fitted to the ranks it shows.
  layer.heads = {{Proj::Q, 0}, {Proj::Q, 1}, {Proj::K, 0}};
  const Figure qHeads = headDifferenceFigure(layer, 0.95, Colormap::Magma, {Proj::Q, /*fitRange=*/false});
  ASSERT_EQ(qHeads.heatmap->rows, 2);
  EXPECT_EQ(qHeads.heatmap->at(0, 1), 5);
  EXPECT_EQ(qHeads.heatmap->rowLabels, (std::vector<std::string>{"q0", "q1"}));
  EXPECT_EQ(qHeads.heatmap->vmin, 0);
  const Figure fitted = headDifferenceFigure(layer, 0.95, Colormap::Magma, {std::nullopt, /*fitRange=*/true});
  EXPECT_EQ(fitted.heatmap->vmin, 5) << "the lowest off-diagonal rank";
  EXPECT_EQ(fitted.heatmap->vmax, 7);
  EXPECT_THROW(headDifferenceFigure(layer, 0.95, Colormap::Magma, {Proj::O, false}), Error) << "no o heads";
  MeasuringCanvas c;
  drawFigure(c, heads, layoutFigure(heads, c, Style::light(), {0, 0}, {600, 600}), Style::light());
  EXPECT_EQ(c.heatmaps, 1u);
  EXPECT_TRUE(std::find(c.texts.begin(), c.texts.end(), "Head differences, layer 3") != c.texts.end());
  EXPECT_TRUE(std::find(c.texts.begin(), c.texts.end(), "effective rank") != c.texts.end())
      << "colour bar label";

  std::vector<MetricPoint> points;
  for (int s = 1; s <= 5; ++s)
    points.push_back({s, s * 100.0, 5.0 - s * 0.5, s == 5 ? 3.0 : NAN, 1e-3, 1, 1000, s * 1.0});
  const Figure training = trainingFigure({{"cycle", &points}}, RunMetric::Loss, RunAxis::Step, 0.5);
  EXPECT_EQ(training.series.size(), 2u) << "raw and smoothed";
  EXPECT_EQ(training.series[1].label, "cycle");
  const Figure two =
      trainingFigure({{"cycle", &points}, {"baseline", &points}}, RunMetric::Loss, RunAxis::Step, 0.5);
  ASSERT_EQ(two.series.size(), 4u);
  EXPECT_TRUE(two.series[0].label.empty() && two.series[1].label.empty())
      << "both runs' raw points first, unlabelled";
  EXPECT_EQ(two.series[2].label, "cycle") << "then the averages, drawn over every run's raw points";
  EXPECT_EQ(two.series[3].label, "baseline");
  const Figure validation =
      trainingFigure({{"cycle", &points}}, RunMetric::ValidationLoss, RunAxis::Tokens, 0.5);
  EXPECT_EQ(validation.series[0].x, (std::vector<double>{500}));
}

// Issue 41: seeds of one arm as one curve. The band is the 95% Student-t interval of the mean over seeds,
// mean +- t_{0.975, n-1} sd / sqrt(n), with t_{0.975, 2} = 4.302653 from the t table; steps some seed has not
// logged yet are left out, and a group of one has no band.
// On log y, a two-seed band whose low edge is at or below zero (t(0.975, 1) = 12.7) runs from the band's top
// to the axis' bottom, every corner finite and on the plot (AxisTransform::toUnit pins values <= 0 to the
// axis minimum; this holds that, it was not broken).
TEST(Figures, ASeedBandBelowZeroOnLogAxesRunsToTheAxisBottom) {
  std::vector<MetricPoint> a, b;
  for (int s = 1; s <= 4; ++s) {
    a.push_back({s, s * 100.0, 3.0 / s, NAN, 1e-3, 1, 1000, s * 1.0});
    b.push_back({s, s * 100.0, 1.0 / s, NAN, 1e-3, 1, 1000, s * 1.0});
  }
  const Figure f = seedGroupFigure({{"cycle", {{"cycle", &a}, {"cycle", &b}}}}, RunMetric::Loss,
                                   RunAxis::Step, 0.0, /*logY=*/true);
  ASSERT_EQ(f.series[0].bandLow.size(), 4u);
  ASSERT_LT(f.series[0].bandLow[0], 0.0) << "the case under test: mean 2 - 12.7 x 1";
  struct QuadCanvas : MeasuringCanvas {
    std::vector<Point> corners;
    void fillQuad(Point p, Point q, Point r, Point s, Rgb, float) override {
      corners.insert(corners.end(), {p, q, r, s});
    }
  } c;
  const FigureLayout l = layoutFigure(f, c, Style::light(), {0, 0}, {600, 400});
  drawFigure(c, f, l, Style::light());
  ASSERT_EQ(c.corners.size(), 12u) << "three segments, each one quad";
  for (const Point& p : c.corners) {
    ASSERT_TRUE(std::isfinite(p.x) && std::isfinite(p.y));
    EXPECT_GE(p.y, l.plotMin.y - 0.5f);
    EXPECT_LE(p.y, l.plotMax.y + 0.5f);
  }
  EXPECT_NEAR(c.corners[0].y, l.plotMax.y, 0.5f) << "the low edge at the axis' bottom";
}

TEST(Figures, SeedGroupsAreOneMeanCurveWithTheStudentTIntervalOfTheirSeeds) {
  const double offsets[3] = {0.0, 0.2, -0.1};
  std::vector<MetricPoint> seeds[3];
  for (int k = 0; k < 3; ++k)
    for (int s = 1; s <= (k == 2 ? 3 : 4); ++s)  // the third seed is one step behind
      seeds[k].push_back({s, s * 100.0, 5.0 - 0.5 * s + offsets[k], s == 2 ? 4.0 + offsets[k] : NAN, 1e-3, 1,
                          1000, s * 1.0});
  std::vector<MetricPoint> alone = seeds[0], notYet;
  const std::vector<RunCurveGroup> groups = {
      {"cycle", {{"cycle", &seeds[0]}, {"cycle", &seeds[1]}, {"cycle", &seeds[2]}, {"cycle", &notYet}}},
      {"baseline", {{"baseline", &alone}}}};
  const Figure f = seedGroupFigure(groups, RunMetric::Loss, RunAxis::Step, 0.0);
  ASSERT_EQ(f.series.size(), 2u);
  const Series& mean = f.series[0];
  EXPECT_EQ(mean.label, "cycle (3 seeds)");
  EXPECT_EQ(mean.x, (std::vector<double>{1, 2, 3})) << "step 4: the third seed has not logged it";
  const double m = (offsets[0] + offsets[1] + offsets[2]) / 3;
  double ss = 0;
  for (const double o : offsets) ss += (o - m) * (o - m);
  const double half = 4.302653 * std::sqrt(ss / 2) / std::sqrt(3.0);
  ASSERT_EQ(mean.bandLow.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const double expected = 5.0 - 0.5 * (i + 1) + m;
    EXPECT_NEAR(mean.y[static_cast<size_t>(i)], expected, 1e-12);
    EXPECT_NEAR(mean.bandLow[static_cast<size_t>(i)], expected - half, 1e-5);
    EXPECT_NEAR(mean.bandHigh[static_cast<size_t>(i)], expected + half, 1e-5);
  }
  EXPECT_EQ(f.series[1].label, "baseline");
  EXPECT_TRUE(f.series[1].bandLow.empty()) << "one seed: no interval";
  EXPECT_EQ(f.series[1].y.size(), 4u);
  // Validation is logged at step 2 only; every seed has it.
  const Figure v = seedGroupFigure(groups, RunMetric::ValidationLoss, RunAxis::Tokens, 0.0);
  EXPECT_EQ(v.series[0].x, (std::vector<double>{200}));
  EXPECT_NEAR(v.series[0].y[0], 4.0 + m, 1e-12);
  // A seed not yet evaluated: the validation panel keeps the loss panel's name (one shared legend in an
  // export, where "(3 seeds)" and "(2 seeds)" in one colour were two entries) and says how many it averages.
  for (MetricPoint& p : seeds[2]) p.valLoss = NAN;
  const Figure partial = seedGroupFigure(groups, RunMetric::ValidationLoss, RunAxis::Tokens, 0.0);
  EXPECT_EQ(partial.series[0].label, "cycle (3 seeds)");
  EXPECT_NEAR(partial.series[0].y[0], 4.0 + (offsets[0] + offsets[1]) / 2, 1e-12);
  EXPECT_NE(partial.subtitle.find("cycle: 2 of its 3 seeds so far"), std::string::npos) << partial.subtitle;
  EXPECT_EQ(v.subtitle.find("so far"), std::string::npos) << "every seed evaluated: no note";
  // Smoothing is each seed's own, before the mean (the mean of EMAs is the EMA of the mean: both linear).
  const Figure smooth = seedGroupFigure(groups, RunMetric::Loss, RunAxis::Step, 0.5);
  std::vector<double> meanRaw;
  for (int s = 1; s <= 3; ++s) meanRaw.push_back(5.0 - 0.5 * s + m);
  const std::vector<double> ema = exponentialMovingAverage(meanRaw, 0.5);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(smooth.series[0].y[i], ema[i], 1e-12);
}

TEST(Figures, RankDynamicsPlotsTheChosenQuantityOfEachMatrixAgainstStep) {
  RankDynamics d;
  d.threshold = 0.9;
  d.trajectories = {{"layers.0.q", {{10, 5, 3.5, 2.0}, {20, 7, 4.5, 1.5}}},
                    {"embedding", {{10, 30, 12.0, 9.0}, {20, 28, 11.0, 8.0}}}};
  const plot::Figure rank = plot::rankDynamicsFigure(d, plot::RankQuantity::EffectiveRank);
  EXPECT_EQ(rank.title, "Effective rank against training step");
  EXPECT_EQ(rank.yLabel, "effective rank (90%)");
  EXPECT_EQ(rank.subtitle, "2 checkpoints");
  ASSERT_EQ(rank.series.size(), 2u);
  EXPECT_EQ(rank.series[1].label, "embedding");
  EXPECT_EQ(rank.series[0].x, (std::vector<double>{10, 20}));
  EXPECT_EQ(rank.series[0].y, (std::vector<double>{5, 7}));
  const auto& a = rank.series[0].color;
  const auto& b = rank.series[1].color;
  EXPECT_FALSE(a.r == b.r && a.g == b.g && a.b == b.b) << "each matrix its own colour";
  EXPECT_EQ(plot::rankDynamicsFigure(d, plot::RankQuantity::StableRank).series[1].y,
            (std::vector<double>{12.0, 11.0}));
  EXPECT_EQ(plot::rankDynamicsFigure(d, plot::RankQuantity::SpectralNorm).series[0].y,
            (std::vector<double>{2.0, 1.5}));
}

// A texture belongs to a map's content: two different maps of the same size (built one after the other in the
// same stack slot, as a view rebuilding its figure would) never share a texture; equal content does.
TEST(Figures, HeatmapTexturesKeyOnContentNotOnWhereTheFigureLives) {
  auto build = [](float base) {
    HeadDiffLayer layer;
    layer.labels = {"q0", "q1"};
    layer.map.n = 2;
    layer.map.rank = {0, static_cast<int32_t>(base), static_cast<int32_t>(base), 0};
    layer.map.relativeDifference.assign(4, 0.5f);
    return headDifferenceFigure(layer, 0.95, Colormap::Viridis);
  };
  TextureCache::Key first, second, again;
  {
    const Figure f = build(3);
    first = TextureCache::keyOf(*f.heatmap);
  }
  {
    const Figure f = build(5);
    second = TextureCache::keyOf(*f.heatmap);
  }
  {
    const Figure f = build(3);
    again = TextureCache::keyOf(*f.heatmap);
  }
  EXPECT_NE(first, second) << "two different maps of equal size";
  EXPECT_EQ(first, again) << "the same map is the same texture";
  Figure magma = build(3);
  magma.heatmap->colormap = Colormap::Magma;
  EXPECT_NE(TextureCache::keyOf(*magma.heatmap), first) << "another colormap is another texture";
}

TEST(Designer, PaintingRenumbersAndResizingKeepsTheTopologyValid) {
  Topology t = demoTopology();                   // cycle L=6 U=3
  paintBlock(t, DesignColumn::Attention, 4, 3);  // a new block
  EXPECT_EQ(t.attention.assign, (std::vector<int64_t>{0, 1, 2, 0, 3, 2}));
  EXPECT_EQ(t.provenance.pattern, "custom");
  paintBlock(t, DesignColumn::Attention, 1,
             0);  // block 1 disappears: 3 becomes 1? no -- renumbered by first use
  EXPECT_EQ(t.attention.assign, (std::vector<int64_t>{0, 0, 1, 0, 2, 1}));
  EXPECT_NO_THROW(validateTopology(t));
  resizeLayers(t, 8);
  EXPECT_EQ(t.attention.assign.size(), 8u);
  EXPECT_NO_THROW(validateTopology(t));
  applyPattern(t, SharingPattern::Sequence, 4);
  EXPECT_EQ(t.ffn.assign, (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  ModelDims d = t.model;
  d.dModel = 100;
  d.heads = 6;
  syncHeadDim(d);
  EXPECT_EQ(d.dModel % d.heads, 0);
  EXPECT_EQ(d.headDim % 2, 0);
  EXPECT_EQ(d.heads % d.kvHeads, 0);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Export, PngSvgAndPdfWithTheSameLabels) {
  const fs::path dir = testing::makeTempDir("export");
  MatrixSpectrum m{{"layers.0.q"}, {}};
  for (int i = 0; i < 64; ++i) m.spectrum.sigma.push_back(std::exp(-i / 10.0));
  m.spectrum.effectiveRank = 30;
  const Figure f = spectrumFigure({&m}, true, "Export title & <more>");
  ExportOptions options;
  options.size = {640, 400, 72, 1};
  for (const char* ext : {"png", "svg", "pdf"}) exportFigure(f, dir / (std::string("f.") + ext), options);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "f.png").c_str());
  ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(png), 640);
  EXPECT_EQ(cairo_image_surface_get_height(png), 400);
  cairo_surface_destroy(png);
  const std::string svg = slurp(dir / "f.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find(">Export title &amp; &lt;more&gt;</text>"), std::string::npos)
      << "text stays text, escaped";
  EXPECT_NE(svg.find(">index i</text>"), std::string::npos) << "axis labels are text";
  EXPECT_EQ(svg.find("glyph"), std::string::npos) << "no text drawn as glyph outlines";
  EXPECT_EQ(slurp(dir / "f.pdf").substr(0, 5), "%PDF-");
  EXPECT_THROW(exportFigure(f, dir / "f.bmp"), Error);
  EXPECT_FALSE(fs::exists(dir / "f.bmp"));
  fs::remove_all(dir);
}

// A PNG shows a heatmap with more cells than pixels by its cells' mean colours, and magnified cells crisp:
// each sampled pixel is within a rounding of a colour a closed form gives. A checkerboard of 2,048 x 2,048
// cells of 0 and 1 in about 360 x 360 pixels is the mean of its two colours everywhere (nearest sampling
// shows one or the other, or a moire); an 8 x 8 one is each pixel one of the two. (Exports keep cells
// square: both axes scale alike.)
TEST(Export, APngShowsAHeatmapWithMoreCellsThanPixelsAsTheirMeanColour) {
  const fs::path dir = testing::makeTempDir("export-heatmap");
  for (const int side : {2048, 8}) {
    Heatmap h;
    h.rows = h.cols = side;
    for (int r = 0; r < side; ++r)
      for (int c = 0; c < side; ++c) h.values.push_back(static_cast<float>((r + c) % 2));
    Figure f;
    f.heatmap = h;
    ExportOptions options;
    options.size = {640, 400, 72, 1};
    exportFigure(f, dir / "f.png", options);
    cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "f.png").c_str());
    ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
    const Rgb zero = heatmapCellColor(h, 0), one = heatmapCellColor(h, 1);
    const std::vector<testing::DoubledRgb> allowed =
        side == 2048
            ? std::vector{testing::meanOf(zero.r, zero.g, zero.b, one.r, one.g, one.b)}
            : std::vector{testing::doubled(zero.r, zero.g, zero.b), testing::doubled(one.r, one.g, one.b)};
    const unsigned char* data = cairo_image_surface_get_data(png);
    const int stride = cairo_image_surface_get_stride(png);
    int worst = 0;
    // 20 x 20 pixels left of the middle: inside the map, clear of the colour bar on its right.
    for (int y = 190; y < 210; ++y)
      for (int x = 270; x < 290; ++x) {
        const uint32_t argb = *reinterpret_cast<const uint32_t*>(data + y * stride + 4 * x);
        worst = std::max(worst, testing::twiceDistanceToNearest(
                                    {static_cast<int>(argb >> 16 & 0xFF), static_cast<int>(argb >> 8 & 0xFF),
                                     static_cast<int>(argb & 0xFF)},
                                    allowed));
      }
    cairo_surface_destroy(png);
    EXPECT_LE(worst, 3) << side << " x " << side << " cells: each pixel "
                        << (side == 2048 ? "the mean" : "0 or 1") << " (twice the largest channel distance)";
  }
  fs::remove_all(dir);
}

// The PDF's page box, "/MediaBox [ 0 0 W H ]", as Cairo writes it (uncompressed).
std::pair<double, double> pdfPageSize(const std::string& pdf) {
  const size_t at = pdf.find("/MediaBox");
  if (at == std::string::npos) return {0, 0};
  std::istringstream in(pdf.substr(pdf.find('[', at) + 1, 80));
  double x0, y0, w, h;
  in >> x0 >> y0 >> w >> h;
  return {w - x0, h - y0};
}

// Journal sizes: a single column is 3.5 in wide, so the PDF and SVG pages are 3.5 x 72 = 252 pt and the PNG
// 3.5 x 300 dpi = 1050 pixels; its text is 8 pt (13 pt x 8/13) and its title 15 x 8/13 = 9.23 pt.
TEST(Export, SizePresetsGiveThePageInPointsAndThePngAtItsDpi) {
  const fs::path dir = testing::makeTempDir("export-sizes");
  Heatmap h;
  h.rows = 4;
  h.cols = 12;
  h.values.assign(48, 0.5f);
  Figure f;
  f.title = "Heads";
  f.heatmap = h;
  ExportOptions options;
  options.size = parseFigureSize("single", "--size");
  for (const char* ext : {"png", "svg", "pdf"}) exportFigure(f, dir / (std::string("f.") + ext), options);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "f.png").c_str());
  EXPECT_EQ(cairo_image_surface_get_width(png), 1050);
  EXPECT_EQ(cairo_image_surface_get_height(png), 780);
  cairo_surface_destroy(png);
  const auto [w, h2] = pdfPageSize(slurp(dir / "f.pdf"));
  EXPECT_NEAR(w, 252, 0.01);
  EXPECT_NEAR(h2, 187.2, 0.01);
  const std::string svg = slurp(dir / "f.svg");
  EXPECT_NE(svg.find("width=\"252pt\" height=\"187.2pt\""), std::string::npos);
  EXPECT_NE(svg.find("font-size=\"9.23\" fill=\"#1e1e1e\">Heads</text>"), std::string::npos);
  EXPECT_NE(svg.find("font-size=\"8\""), std::string::npos);
  // Square cells: the embedded 12 x 4 image is drawn three times as wide as it is tall.
  const size_t image = svg.find("<image ");
  ASSERT_NE(image, std::string::npos);
  double iw = 0, ih = 0;
  std::sscanf(svg.c_str() + svg.find("width=", image), "width=\"%lf\" height=\"%lf\"", &iw, &ih);
  EXPECT_NEAR(iw / ih, 3.0, 0.02) << iw << " x " << ih;

  const FigureSize custom = parseFigureSize("5x2.5", "--size");
  EXPECT_DOUBLE_EQ(custom.widthPt, 360);
  EXPECT_DOUBLE_EQ(custom.heightPt, 180);
  EXPECT_EQ(custom.pixelWidth(), 1500);
  for (const char* bad : {"5x", "x2", "5by2", "-1x2", "0x2", "medium", "1e9x1"}) {
    try {
      parseFigureSize(bad, "--size");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--size"), std::string::npos) << e.what();
    }
  }
  options.size.dpi = 2400;  // 7 in x 2400 dpi = 16,800 px fits, 10 in does not
  options.size.widthPt = 720;
  EXPECT_THROW(exportFigure(f, dir / "big.png", options), Error);
  EXPECT_FALSE(fs::exists(dir / "big.png"));
  EXPECT_NO_THROW(exportFigure(f, dir / "big.pdf", options)) << "dpi limits only the PNG";
  options.size = parseFigureSize("100x50", "--size");  // a poster: 30,000 px at 300 dpi, fine as a PDF
  EXPECT_NO_THROW(exportFigure(f, dir / "poster.pdf", options));
  EXPECT_THROW(exportFigure(f, dir / "poster.png", options), Error);
  fs::remove_all(dir);
}

// A forest plot at the one-column size, under a two-line title and a three-line subtitle, leaves a data
// area too short to give half of it to a five-entry legend, and every corner covers data: the export grows
// taller rather than lay the legend over the data, the data area keeps its height, the legend sits below the
// x axis, the y label is wrapped to the plot it stands beside, and every text stays inside the page. The
// page's height is the size exportFigure returns (PNG pixels, PDF and SVG points).
TEST(Export, AOneColumnFigureGrowsTallerRatherThanLayItsLegendOverTheData) {
  ExperimentReport r = forestReport("head-sharing");
  r.arms[0].difference = meanInterval(std::vector<double>{0.01, -0.02, 0.0, 0.015});
  r.arms[0].documentDifference = {
      .estimate = 0.001, .lo = -0.001, .hi = 0.003, .clusters = 40, .resamples = 2000};
  r.arms[0].expect = "no-worse";
  r.arms[0].margin = 0.02;
  r.arms[0].paperEffect = -0.022;
  r.arms[2].aaOf = "baseline";
  r.arms[2].difference = meanInterval(std::vector<double>{-0.01, 0.0, -0.02, 0.002});
  r.arms[2].documentDifference = {
      .estimate = -0.008, .lo = -0.009, .hi = -0.007, .clusters = 40, .resamples = 2000};
  Figure f = experimentForestFigure(r);
  f.title = "head-sharing: each arm minus baseline, paired by seed (95% intervals; below 0 is better)";
  f.subtitle =
      "Leveraging Low-Rank Structure for Effective Weight-Sharing in Language Models (the low-rank "
      "sharing paper), Sec. 4.2 (Eq. 1, Fig. 4a), App. A, Table 1";
  const FigureSize single = parseFigureSize("single", "--size");
  Style exportStyle = Style::light();  // as figure_export draws the one-column preset
  exportStyle.legendBelowRatherThanOverData = exportStyle.squareHeatmapCells = true;
  exportStyle.fontSize *= static_cast<float>(single.fontScale);
  exportStyle.titleSize *= static_cast<float>(single.fontScale);
  TextBoxes c;
  const Point asked{static_cast<float>(single.widthPt), static_cast<float>(single.heightPt)};
  const FigureLayout cramped = layoutFigure(f, c, exportStyle, {0, 0}, asked);
  ASSERT_GT(cramped.heightWanted, 0) << "at 2.6 in the legend has no room below";
  const Point grown{asked.x, asked.y + std::ceil(cramped.heightWanted)};
  const FigureLayout l = layoutFigure(f, c, exportStyle, {0, 0}, grown);
  EXPECT_EQ(l.heightWanted, 0);
  ASSERT_FALSE(l.legend.empty());
  for (const auto& row : l.legend) EXPECT_GT(row.min.y, l.plotMax.y) << "below the data";
  EXPECT_NEAR(l.plotMax.y - l.plotMin.y, cramped.plotMax.y - cramped.plotMin.y, 1.0)
      << "the data area keeps the height it had";
  drawFigure(c, f, l, exportStyle);
  for (const TextBoxes::Box& b : c.boxes) {
    EXPECT_GE(b.min.x, -0.01f) << b.text;
    EXPECT_GE(b.min.y, -0.01f) << b.text;
    EXPECT_LE(b.max.x, grown.x + 0.01f) << b.text;
    EXPECT_LE(b.max.y, grown.y + 0.01f) << b.text;
  }
  // (never at under half its length, the rule that keeps a squeezed plot's label from a word per line)
  const float wrapAt = std::max(l.plotMax.y - l.plotMin.y, c.textSize(f.yLabel, exportStyle.fontSize).x / 2);
  for (const std::string& line : l.yLabelLines)
    EXPECT_LE(c.textSize(line, exportStyle.fontSize).x, wrapAt + 0.5f) << line;

  const fs::path dir = testing::makeTempDir("export-grown");
  ExportOptions options;
  options.size = single;
  const FigureSize written = exportFigure(f, dir / "forest.png", options);  // laid out in Cairo's metrics
  EXPECT_EQ(written.widthPt, single.widthPt);
  EXPECT_GT(written.heightPt, single.heightPt);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "forest.png").c_str());
  EXPECT_EQ(cairo_image_surface_get_height(png), written.pixelHeight());
  cairo_surface_destroy(png);
  exportFigure(f, dir / "forest.pdf", options);
  EXPECT_NEAR(pdfPageSize(slurp(dir / "forest.pdf")).second, written.heightPt, 0.01);
  // In Cairo's own metrics, as the export measured: at the height written the legend is below the data. So
  // too for a legend taller than the data area it would stand beside (nine runs with long names, one to a
  // line), which one growth by the legend's height alone would leave over the data.
  Figure runs;
  runs.title = f.title;
  runs.subtitle = f.subtitle;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> anywhere(0, 1);
  for (int r = 0; r < 9; ++r) {
    Series s;
    s.label = "cycle-rev L8 U4 r8 (seed " + std::to_string(r + 1) + ", lr 0.003)";
    for (int i = 0; i < 200; ++i) s.x.push_back(i), s.y.push_back(anywhere(rng));
    runs.series.push_back(s);
  }
  for (const Figure* figure : {&f, &runs}) {
    const FigureSize page = exportFigure(*figure, dir / "page.svg", options);
    SvgCanvas cairo(page.widthPt, page.heightPt);
    const FigureLayout atPage =
        layoutFigure(*figure, cairo, exportStyle, {0, 0},
                     {static_cast<float>(page.widthPt), static_cast<float>(page.heightPt)});
    ASSERT_FALSE(atPage.legend.empty());
    for (const auto& row : atPage.legend)
      EXPECT_GE(row.min.y, atPage.plotMax.y) << figure->series.size() << " series: below the data";
    EXPECT_GT(page.heightPt, single.heightPt);
  }
  EXPECT_NE(
      exportedFileDescription(dir / "forest.png", single, written).find("taller than the 2.60 in asked"),
      std::string::npos);
  EXPECT_EQ(exportedFileDescription(dir / "forest.png", single, single), (dir / "forest.png").string());
  fs::remove_all(dir);
}

// Panels share a page side by side: each title is centred in its own half (the training export's loss and
// validation loss).
TEST(Export, PanelsShareThePageSideBySide) {
  const fs::path dir = testing::makeTempDir("export-panels");
  Figure left, right;
  left.title = "Left panel";
  right.title = "Right panel";
  for (Figure* f : {&left, &right}) f->series.push_back({"s", {1, 2, 3}, {3, 1, 2}});
  ExportOptions options;
  options.size = parseFigureSize("double", "--size");  // 504 pt wide: panels of 252 pt
  const std::vector<Figure> panels = {left, right};
  exportPanels(panels, dir / "p.svg", options);
  exportPanels(panels, dir / "p.png", options);
  const std::string svg = slurp(dir / "p.svg");
  auto titleX = [&](const std::string& title) {
    const size_t end = svg.find(">" + title + "</text>");
    if (end == std::string::npos) return -1.0;
    const size_t x = svg.rfind("<text x=\"", end);
    return std::stod(svg.substr(x + 9));
  };
  const double l = titleX("Left panel"), r = titleX("Right panel");
  EXPECT_GT(l, 0);
  EXPECT_LT(l, 252);
  EXPECT_GT(r, 252) << "the second panel starts at half the page";
  EXPECT_LT(r, 504);
  fs::remove_all(dir);
}

// Panels that name the same runs in the same colours (the training export's loss beside its validation loss)
// share one legend below both, across the page: at one-column width each half is narrower than a long run
// name, and eighteen runs' legend in either half lay over its data. Each name is written once, below both
// panels' x labels and inside the page, which grows taller for it. Panels whose names disagree in colour keep
// a legend each.
TEST(Export, PanelsThatNameTheSameRunsShareOneLegendBelowThem) {
  const fs::path dir = testing::makeTempDir("export-shared-legend");
  Figure loss, validation;
  loss.title = "Training: loss";
  validation.title = "Training: validation loss";
  loss.xLabel = validation.xLabel = "step";
  for (int r = 0; r < 18; ++r) {
    const std::string name = (r < 6    ? "baseline"
                              : r < 12 ? "baseline-aa"
                                       : "qkv-shared") +
                             std::string(" (seed ") + std::to_string(r % 6 + 1) + ")";
    Series s{.label = name, .color = seriesColor(r)};
    for (int i = 0; i < 100; ++i) s.x.push_back(i), s.y.push_back(5.0 - 0.01 * i + 0.01 * r);
    loss.series.push_back(s);
    s.style = SeriesStyle::LineAndMarkers;  // drawn with markers, listed with the same swatch
    validation.series.push_back(s);
  }
  ExportOptions options;
  options.size = parseFigureSize("single", "--size");
  const std::vector<Figure> panels = {loss, validation};
  const FigureSize written = exportPanels(panels, dir / "p.svg", options);
  EXPECT_GT(written.heightPt, options.size.heightPt) << "grown for the legend";
  struct Text {
    double x, y;
    std::string text;
  };
  auto texts = [&](const fs::path& file) {
    const std::string svg = slurp(file);
    std::vector<Text> out;
    const std::regex text(R"re(<text x="([-0-9.e]+)" y="([-0-9.e]+)"[^>]*>([^<]*)</text>)re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
      out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3]});
    return out;
  };
  const std::vector<Text> page = texts(dir / "p.svg");
  double xLabelsBottom = 0;
  int xLabels = 0;
  for (const Text& t : page)
    if (t.text == "step") xLabelsBottom = std::max(xLabelsBottom, t.y), ++xLabels;
  ASSERT_EQ(xLabels, 2);
  for (const Series& s : loss.series) {
    const auto named =
        std::count_if(page.begin(), page.end(), [&](const Text& t) { return t.text == s.label; });
    EXPECT_EQ(named, 1) << s.label << ": one legend for both panels";
    for (const Text& t : page)
      if (t.text == s.label) {
        EXPECT_GT(t.y, xLabelsBottom) << s.label << ": below both panels";
        EXPECT_LE(t.y, written.heightPt) << s.label;
      }
  }
  validation.series[3].color = {1, 2, 3};  // one name in another colour: not one run's swatch
  const std::vector<Figure> disagreeing = {loss, validation};
  exportPanels(disagreeing, dir / "q.svg", options);
  const std::vector<Text> apart = texts(dir / "q.svg");
  EXPECT_EQ(std::count_if(apart.begin(), apart.end(),
                          [&](const Text& t) { return t.text == loss.series[0].label; }),
            2)
      << "each panel keeps its own legend";
  fs::remove_all(dir);
}

// The SVG is well-formed XML whose text elements carry the figure's words (read by Python's own parser).
TEST(Export, SvgIsWellFormedXmlToAnIndependentParser) {
  if (testing::runProcess("/usr/bin/python3 -c 'import xml.etree.ElementTree'").exitCode != 0)
    GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path dir = testing::makeTempDir("export-svg");
  MatrixSpectrum m{{"layers.0.q"}, {}};
  for (int i = 0; i < 32; ++i) m.spectrum.sigma.push_back(1.0 / (1 + i));
  exportFigure(spectrumFigure({&m}, true, "A \"quoted\" title"), dir / "f.svg");
  const auto r = testing::runProcess(
      "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "ns = \"{http://www.w3.org/2000/svg}\"; print(r.get(\"width\")); "
      "print(\"|\".join(t.text for t in r.iter(ns + \"text\")))' " +
      testing::shellQuote((dir / "f.svg").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "1200pt");
  EXPECT_NE(r.out.find("A \"quoted\" title"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|index i"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens

namespace sharelens {
namespace {

// Save As names: <model>-<step>-<view>.<ext>, made safe for a file name, and never an existing file.
TEST(Export, DefaultNamesCarryModelStepAndViewAndNeverOverwrite) {
  const fs::path dir = testing::makeTempDir("export-names");
  EXPECT_EQ(defaultExportPath(dir, "cycle-3of6 (model)", 400, "spectrum", "pdf"),
            dir / "cycle-3of6_model-step400-spectrum.pdf");
  // A followed run's checkpoint is labelled with its step already: the name says it once.
  EXPECT_EQ(defaultExportPath(dir, "baseline @ step 15", 15, "spectrum", "png"),
            dir / "baseline-step15-spectrum.png");
  EXPECT_EQ(defaultExportPath(dir, "gpt2", -1, "heads", "svg"), dir / "gpt2-heads.svg");
  EXPECT_EQ(defaultExportPath(dir, "///", -1, "heads", "png"), dir / "model-heads.png");
  std::ofstream(dir / "gpt2-heads.svg") << "x";
  std::ofstream(dir / "gpt2-heads-2.svg") << "x";
  EXPECT_EQ(defaultExportPath(dir, "gpt2", -1, "heads", "svg"), dir / "gpt2-heads-3.svg");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens

namespace sharelens {
namespace {

// The colour maps ship as assets: the table runs from the file's first anchor to its last (CIELAB
// interpolation passes through its anchors), and a broken file is a named error with the field and a hint.
TEST(Colormaps, TablesComeFromTheShippedFilesAndBrokenFilesAreNamedErrors) {
  const auto anchors = plot::readColormapAnchors(assetsDirectory() / "colormaps" / "viridis.json");
  ASSERT_EQ(anchors.front(), 0x440154u);
  const auto& table = plot::colormapTable(plot::Colormap::Viridis);
  auto hex = [](const plot::Rgb& c) { return (uint32_t{c.r} << 16) | (uint32_t{c.g} << 8) | c.b; };
  auto near = [&](uint32_t a, uint32_t b) {
    for (int shift : {16, 8, 0})
      if (std::abs(static_cast<int>((a >> shift) & 0xff) - static_cast<int>((b >> shift) & 0xff)) > 1)
        return false;
    return true;
  };
  EXPECT_TRUE(near(hex(table.front()), anchors.front())) << std::hex << hex(table.front());
  EXPECT_TRUE(near(hex(table.back()), anchors.back())) << std::hex << hex(table.back());

  const fs::path dir = testing::makeTempDir("colormaps");
  const auto errorFor = [&](const std::string& text) {
    std::ofstream(dir / "bad.json") << text;
    try {
      plot::readColormapAnchors(dir / "bad.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string e = errorFor(R"({"anchors": ["#440154", "blue"]})");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("anchors"), std::string::npos) << e;
  EXPECT_NE(e.find("#rrggbb"), std::string::npos) << e;
  e = errorFor(R"({"anchors": ["#440154"]})");
  EXPECT_NE(e.find("at least 2"), std::string::npos) << e;
  e = errorFor(R"({"name": "x"})");
  EXPECT_NE(e.find("anchors"), std::string::npos) << e;
  fs::remove(dir / "bad.json");
  e = errorFor("");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  fs::remove_all(dir);
}

// Passes everything to the canvas it wraps, and keeps each text drawn with where it was anchored.
class TextRecorder : public Canvas {
 public:
  explicit TextRecorder(Canvas& inner) : m_inner(inner) {}
  void line(Point a, Point b, Rgb c, float w, bool d) override { m_inner.line(a, b, c, w, d); }
  void polyline(std::span<const Point> p, Rgb c, float w, bool d) override { m_inner.polyline(p, c, w, d); }
  void rect(Point a, Point b, Rgb c, float w) override { m_inner.rect(a, b, c, w); }
  void fillRect(Point a, Point b, Rgb c, float alpha) override { m_inner.fillRect(a, b, c, alpha); }
  void fillQuad(Point a, Point b, Point c, Point d, Rgb col, float alpha) override {
    m_inner.fillQuad(a, b, c, d, col, alpha);
  }
  void circle(Point c, float r, Rgb col) override { m_inner.circle(c, r, col); }
  void columnBand(std::span<const ColumnSpan> c, Rgb col, float w) override { m_inner.columnBand(c, col, w); }
  void text(Point at, std::string_view t, Rgb c, float size, Align h, Align v, bool vertical) override {
    texts.push_back({std::string(t), at});
    m_inner.text(at, t, c, size, h, v, vertical);
  }
  Point textSize(std::string_view t, float size) override { return m_inner.textSize(t, size); }
  void heatmapCells(Point a, Point b, const Heatmap& h) override { m_inner.heatmapCells(a, b, h); }
  void colorbar(Point a, Point b, Colormap c) override { m_inner.colorbar(a, b, c); }
  void pushClip(Point a, Point b) override { m_inner.pushClip(a, b); }
  void popClip() override { m_inner.popClip(); }
  std::vector<std::pair<std::string, Point>> texts;

 private:
  Canvas& m_inner;
};

// The three export formats lay a figure out alike: the same tick labels, legend rows and titles at the same
// places, whichever surface measures the text. (An image surface rounds advances to its pixels: the SVG
// canvas, which measures on one, and the PNG export chose other ticks than the PDF at the one-column size.)
TEST(Export, SvgPdfAndPngPlaceTheSameTextsAtTheSamePlaces) {
  Figure f;
  f.title = "Singular-value spectra";
  f.xLabel = "index i";
  f.yLabel = "sigma_i / sigma_1";
  f.yScale = Scale::Log10;
  for (int r = 0; r < 3; ++r) {
    Series s;
    s.label = "layers." + std::to_string(2 * r) + ".q  (rank " + std::to_string(21 + r) + ")";
    for (int i = 0; i < 64; ++i) {
      s.x.push_back(i);
      s.y.push_back(std::pow(10.0, -3.0 * i / 63.0 - 0.1 * r));
    }
    f.series.push_back(s);
  }
  const double widthPt = 3.5 * 72, heightPt = 2.6 * 72;
  Style style = Style::light();
  style.fontSize *= 8.0f / 13.0f;  // the one-column preset's 8 pt text
  style.titleSize *= 8.0f / 13.0f;
  auto draw = [&](Canvas& target) {
    TextRecorder recorder(target);
    const FigureLayout layout =
        layoutFigure(f, recorder, style, {0, 0}, {static_cast<float>(widthPt), static_cast<float>(heightPt)});
    drawFigure(recorder, f, layout, style);
    return recorder.texts;
  };
  SvgCanvas svg(widthPt, heightPt);
  const auto svgTexts = draw(svg);
  cairo_surface_t* pdf = cairo_pdf_surface_create_for_stream(nullptr, nullptr, widthPt, heightPt);
  cairo_t* pdfContext = cairo_create(pdf);
  const auto pdfTexts = [&] {
    sharelens::CairoCanvas canvas(pdfContext);
    return draw(canvas);
  }();
  const double dpi = 300;
  cairo_surface_t* png = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(widthPt * dpi / 72),
                                                    static_cast<int>(heightPt * dpi / 72));
  cairo_t* pngContext = cairo_create(png);
  cairo_scale(pngContext, dpi / 72, dpi / 72);
  const auto pngTexts = [&] {
    sharelens::CairoCanvas canvas(pngContext);
    return draw(canvas);
  }();
  for (cairo_t* cr : {pdfContext, pngContext}) cairo_destroy(cr);
  for (cairo_surface_t* s : {pdf, png}) cairo_surface_destroy(s);

  ASSERT_GE(pdfTexts.size(), 10u) << "title, axis labels, ticks and legend";
  for (const auto& [name, other] : {std::pair{"SVG", svgTexts}, std::pair{"PNG", pngTexts}}) {
    ASSERT_EQ(other.size(), pdfTexts.size()) << name << " draws as many texts as the PDF";
    for (size_t i = 0; i < pdfTexts.size(); ++i) {
      EXPECT_EQ(other[i].first, pdfTexts[i].first) << name << " text " << i;
      EXPECT_NEAR(other[i].second.x, pdfTexts[i].second.x, 1e-3) << name << " '" << pdfTexts[i].first << "'";
      EXPECT_NEAR(other[i].second.y, pdfTexts[i].second.y, 1e-3) << name << " '" << pdfTexts[i].first << "'";
    }
  }
}

// An export's legend never covers data: with every corner of the plot crossed by noisy curves it goes below
// the plot, in columns that fit the figure, and the data area gives up the room; with an empty corner it
// stays there, and on screen (where it is clicked to hide a series) it stays in the emptiest corner.
TEST(Figures, AnExportsLegendGoesBelowThePlotRatherThanOverItsData) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> anywhere(0, 1);
  Figure filled;
  filled.xLabel = "step";
  for (int r = 0; r < 5; ++r) {
    Series s;
    s.label = "seed " + std::to_string(r);
    for (int i = 0; i < 400; ++i) s.x.push_back(i), s.y.push_back(anywhere(rng));
    filled.series.push_back(s);
  }
  Figure cornerFree;  // a falling curve: the top-right corner is empty
  Series falling;
  falling.label = "loss";
  for (int i = 0; i < 400; ++i) falling.x.push_back(i), falling.y.push_back(1.0 / (1 + i));
  cornerFree.series.push_back(falling);
  Style exportStyle = Style::light();
  exportStyle.legendBelowRatherThanOverData = true;
  const Point size{252, 187};  // the one-column preset, in points
  MeasuringCanvas c;

  const FigureLayout below = layoutFigure(filled, c, exportStyle, {0, 0}, size);
  ASSERT_EQ(below.legend.size(), 5u);
  const FigureLayout screen = layoutFigure(filled, c, Style::light(), {0, 0}, size);
  EXPECT_LT(below.plotMax.y, screen.plotMax.y) << "the data area gave up room for the legend";
  // Tick length 4, the tick labels and the axis label below them, 6 apart.
  const float xLabelBottom = below.plotMax.y + 4 + 6 + 2 * c.textSize("0", exportStyle.fontSize).y;
  std::set<float> columns;
  for (size_t i = 0; i < below.legend.size(); ++i) {
    const auto& row = below.legend[i];
    EXPECT_GT(row.min.y, xLabelBottom) << "row " << i << " is below the x tick labels";
    EXPECT_LE(row.max.y, size.y) << "row " << i << " is inside the figure";
    EXPECT_GE(row.min.x, 0.0f);
    EXPECT_LE(row.max.x, size.x);
    columns.insert(row.min.x);
    for (size_t j = 0; j < i; ++j) {
      const auto& other = below.legend[j];
      EXPECT_FALSE(row.min.x < other.max.x && other.min.x < row.max.x && row.min.y < other.max.y &&
                   other.min.y < row.max.y)
          << "rows " << j << " and " << i << " overlap";
    }
  }
  EXPECT_GE(columns.size(), 2u) << "five short labels share the width in columns";

  for (const FigureLayout& inside : {screen, layoutFigure(cornerFree, c, exportStyle, {0, 0}, size)})
    for (const auto& row : inside.legend) {
      EXPECT_GE(row.min.y, inside.plotMin.y);
      EXPECT_LE(row.max.y, inside.plotMax.y) << "a corner of the plot";
    }
}

// Issue 41 item 6: an experiment's forest plot exported at the one-column size (252 x 187 pt) had its title
// and turned y label cut off at the figure's edges (the title never wrapped; the y label was placed with its
// top, not its middle, at the plot's middle) and, without its title (`export --no-title`), its five-entry
// legend over the data (one entry per line below would leave under half the plot). Every text's box now lies
// inside the figure, and the untitled figure's legend goes below, packed into fewer lines than it has
// entries. (With a title and three lines of subtitle no legend fits below a 2.6 in one-column plot: the
// export grows taller, Export.AOneColumnFigureGrowsTallerRatherThanLayItsLegendOverTheData.)
TEST(Figures, AOneColumnExportKeepsEveryTextInsideTheFigureAndItsLegendOffTheData) {
  Figure f;
  f.title = "qkv-sharing: each arm minus baseline, paired by seed (95% intervals; below 0 is better)";
  f.subtitle = "Leveraging Low-Rank Structure for Effective Weight-Sharing in Language Models, Table 1";
  f.yLabel = "held-out NLL difference (nats / token)";
  f.xCategories = {"qkv-shared", "baseline-aa (A/A)"};
  for (const char* label : {"no difference", "no-worse margin", "over held-out documents (bootstrap)",
                            "over seeds (t)", "the paper's difference"}) {
    Series s;  // each reference line crosses the whole plot, so every corner holds data
    s.label = label;
    s.x = {-0.5, 0, 0.5, 1, 1.5};
    s.y = {0.02 * std::sin(static_cast<double>(f.series.size())), -0.02, 0.02, -0.02, 0.0};
    f.series.push_back(s);
  }
  Style exportStyle = Style::light();  // as figure_export draws the one-column preset: 8 pt text
  exportStyle.legendBelowRatherThanOverData = true;
  exportStyle.fontSize *= 8.0f / 13.0f, exportStyle.titleSize *= 8.0f / 13.0f;
  const Point size{252, 187};
  TextBoxes c;
  const FigureLayout l = layoutFigure(f, c, exportStyle, {0, 0}, size);
  drawFigure(c, f, l, exportStyle);
  ASSERT_FALSE(c.boxes.empty());
  for (const TextBoxes::Box& b : c.boxes) {
    EXPECT_GE(b.min.x, -0.01f) << b.text;
    EXPECT_GE(b.min.y, -0.01f) << b.text;
    EXPECT_LE(b.max.x, size.x + 0.01f) << b.text;
    EXPECT_LE(b.max.y, size.y + 0.01f) << b.text;
  }
  // The y label left of the plot, each line centred on the plot's height where the figure allows it.
  ASSERT_FALSE(l.yLabelLines.empty());
  for (const std::string& line : l.yLabelLines) {
    const auto box =
        std::find_if(c.boxes.begin(), c.boxes.end(), [&](const TextBoxes::Box& b) { return b.text == line; });
    ASSERT_NE(box, c.boxes.end()) << line;
    EXPECT_LT(box->max.x, l.plotMin.x) << "left of the plot";
    const float middle = (l.plotMin.y + l.plotMax.y) / 2, half = (box->max.y - box->min.y) / 2;
    if (middle - half >= 8 && middle + half <= size.y - 8) {  // the figure's padding allows it: centred
      EXPECT_NEAR((box->min.y + box->max.y) / 2, middle, 0.01) << line;
    }
  }
  f.title.clear(), f.subtitle.clear();
  const FigureLayout untitled = layoutFigure(f, c, exportStyle, {0, 0}, size);
  ASSERT_EQ(untitled.legend.size(), 5u);
  std::set<float> lines;
  for (const auto& row : untitled.legend) {
    EXPECT_GT(row.min.y, untitled.plotMax.y) << "below the plot, not over its data";
    EXPECT_LE(row.max.y, size.y);
    lines.insert(row.min.y);
  }
  EXPECT_LT(lines.size(), 5u) << "packed, not one entry per line";
}

// Issue 41 item 6, a topology in the one-column size: the graph's x labels were thinned at a stride set by
// the widest ("attention blocks"), which dropped the middle one ("layers"); the map of blocks kept square
// cells, a strip a sixth of the figure wide with its "FFN" column unnamed. Every label that fits is kept now,
// none overlapping, and the map fills the width.
TEST(Figures, AOneColumnTopologyNamesEveryColumnAndFillsTheWidth) {
  const Topology t = readTopologyFile(assetsDirectory() / "topologies" / "cycle-rev.json");
  Style exportStyle = Style::light();  // as figure_export draws the one-column preset
  exportStyle.squareHeatmapCells = exportStyle.legendBelowRatherThanOverData = true;
  exportStyle.fontSize *= 8.0f / 13.0f, exportStyle.titleSize *= 8.0f / 13.0f;
  const Point size{252, 187};
  class Labels : public MeasuringCanvas {  // each text with its box, as the canvases align it
   public:
    void text(Point at, std::string_view t, Rgb, float s, Align h, Align v, bool vertical) override {
      const Point box = textSize(t, s), o = alignedTextOrigin(at, box, h, v, vertical);
      placed.push_back({std::string(t), o.x, o.x + (vertical ? box.y : box.x)});
    }
    struct Placed {
      std::string text;
      float left, right;
    };
    std::vector<Placed> placed;
  };
  Labels c;
  const Figure graph = topologyGraphFigure(t);
  drawFigure(c, graph, layoutFigure(graph, c, exportStyle, {0, 0}, size), exportStyle);
  std::vector<Labels::Placed> categories;
  for (const Labels::Placed& p : c.placed)
    if (std::find(graph.xCategories.begin(), graph.xCategories.end(), p.text) != graph.xCategories.end())
      categories.push_back(p);
  ASSERT_EQ(categories.size(), 3u) << "attention blocks, layers, FFN blocks";
  for (size_t i = 1; i < categories.size(); ++i)
    EXPECT_LT(categories[i - 1].right, categories[i].left) << categories[i].text;

  const Figure map = topologyFigure(t);
  Labels m;
  const FigureLayout l = layoutFigure(map, m, exportStyle, {0, 0}, size);
  EXPECT_GT(l.plotMax.x - l.plotMin.x, size.x / 3) << "the map fills the width";
  drawFigure(m, map, l, exportStyle);
  for (const char* column : {"attention", "FFN"})
    EXPECT_TRUE(std::any_of(m.placed.begin(), m.placed.end(), [&](const auto& p) {
      return p.text == column;
    })) << column;
  // The graph's block nodes wear the map's block colours (they were viridis beside the map's palette): block
  // b is the b-th node from the top on each side (TheTopologyGraphConnectsEachLayerToItsBlocks reads it so).
  for (const double side : {0.0, 2.0}) {
    std::vector<std::pair<double, Rgb>> nodes;  // height, colour
    for (const Series& node : graph.series)
      if (node.style == SeriesStyle::Markers && node.x.size() == 1 && node.x[0] == side)
        nodes.emplace_back(node.y[0], node.color);
    std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    ASSERT_EQ(nodes.size(), map.heatmap->categories.size());
    for (size_t b = 0; b < nodes.size(); ++b) {
      const Rgb want = heatmapCellColor(*map.heatmap, static_cast<float>(b)), got = nodes[b].second;
      EXPECT_TRUE(got.r == want.r && got.g == want.g && got.b == want.b) << "side " << side << " block " << b;
    }
  }
}

// Issue 41 item 1: the Designer shows the layer -> block assignment as a graph. Read back from the figure
// alone (which block node each layer's edges reach, by height), the shipped Cycle-Rev and Hierarchy
// topologies give their files' assignments; every layer has one attention edge and one FFN edge.
TEST(Figures, TheTopologyGraphConnectsEachLayerToItsBlocks) {
  for (const char* name : {"cycle-rev", "hierarchy", "sequence"}) {
    const Topology t = readTopologyFile(assetsDirectory() / "topologies" / (std::string(name) + ".json"));
    const Figure f = topologyGraphFigure(t);
    EXPECT_TRUE(f.yDown) << "layer 0 at the top, as the Designer lists layers";
    for (int side = 0; side < 2; ++side) {
      const BlockSharing& s = side == 0 ? t.attention : t.ffn;
      const double blockX = side == 0 ? 0.0 : 2.0;
      std::map<double, int64_t> blockAtHeight;  // block nodes: their height -> index in height order
      for (const Series& node : f.series)
        if (node.style == SeriesStyle::Markers && node.x.size() == 1 && node.x[0] == blockX)
          blockAtHeight.emplace(node.y[0], 0);
      int64_t index = 0;
      for (auto& [y, b] : blockAtHeight) b = index++;
      ASSERT_EQ(static_cast<int64_t>(blockAtHeight.size()), s.uniqueBlocks()) << name;
      std::vector<int> edgesOf(static_cast<size_t>(t.model.layers), 0);
      for (const Series& edge : f.series) {
        if (edge.style != SeriesStyle::Line || edge.x.size() != 2) continue;
        const size_t blockEnd = edge.x[0] == blockX ? 0 : edge.x[1] == blockX ? 1 : 2;
        if (blockEnd == 2) continue;  // the other side's
        const auto layer = static_cast<int64_t>(std::lround(edge.y[1 - blockEnd]));
        ASSERT_TRUE(blockAtHeight.count(edge.y[blockEnd])) << name << ": an edge ends at a block node";
        EXPECT_EQ(blockAtHeight[edge.y[blockEnd]], s.assign[static_cast<size_t>(layer)])
            << name << (side == 0 ? " attention" : " FFN") << ", layer " << layer;
        ++edgesOf[static_cast<size_t>(layer)];
      }
      for (int64_t l = 0; l < t.model.layers; ++l)
        EXPECT_EQ(edgesOf[static_cast<size_t>(l)], 1) << name << " " << l;
    }
  }
}

}  // namespace
}  // namespace sharelens

namespace sharelens {
namespace {

// Issue 38, typed analysis ids (analysis/analysis_ids.hpp): every figure names a registered analysis, every
// analysis has its typed constant, and a figure given another analysis' result (or none) is a named error --
// before, `*resultAs<T>(r)` dereferenced a null pointer.
TEST(Figures, EachFigureDrawsARegisteredAnalysisAndRefusesAnotherResultByName) {
  std::set<std::string_view> registered, typed;
  for (const AnalysisKind& k : analysisKinds()) registered.insert(k.id);
  for (std::string_view id :
       {analyses::kActivations.id, analyses::kSpectra.id, analyses::kHeads.id, analyses::kLayers.id,
        analyses::kMasa.id, analyses::kMasaTrained.id, analyses::kDirectShare.id, analyses::kEmbedding.id,
        analyses::kEmbeddingLoss.id, analyses::kEsd.id})
    typed.insert(id);
  EXPECT_EQ(typed, registered);
  for (const plot::FigureKind& f : plot::figureKinds())
    EXPECT_TRUE(registered.count(f.analysis)) << f.id << " draws '" << f.analysis << "'";

  const plot::FigureKind& heads = plot::figureKind("heads");
  const std::string other =
      testing::errorOf([&] { heads.build(makeResult(std::vector<MatrixSpectrum>{}), plot::FigureParams{}); });
  EXPECT_NE(other.find("figure 'heads': no result to draw"), std::string::npos) << other;
  EXPECT_NE(other.find("the result of the heads analysis"), std::string::npos) << other;
  EXPECT_NE(other.find("a result of another analysis"), std::string::npos) << other;
  const std::string none = testing::errorOf([&] { heads.build(nullptr, plot::FigureParams{}); });
  EXPECT_NE(none.find("found none"), std::string::npos) << none;
}

}  // namespace
}  // namespace sharelens
