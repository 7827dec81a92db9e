// Figure legends without a window: where the legend goes (off the lines, the error bars and the whole of a
// jagged line), which series get a row, and how a dense series is counted and drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "tests/app/plot_test_canvases.hpp"

namespace sharelens {
namespace {

using namespace plot;

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

}  // namespace
}  // namespace sharelens
