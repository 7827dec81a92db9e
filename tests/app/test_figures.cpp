// Figure builders without a window (legends: test_figure_legend.cpp): smoothing, experiment forests
// and seed groups, rank dynamics, topologies, the figure registry, and the Designer's painting.
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
#include "analysis/rank_dynamics.hpp"
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
#include "tests/app/plot_test_canvases.hpp"
#include "tests/support/colour_distance.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/process.hpp"

namespace sharelens {
namespace {

using namespace plot;
namespace fs = std::filesystem;

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

// Issue 41 item 8, ESD alpha and the weights against step (what WeightWatcher and TensorBoard's
// distributions show): alpha is one line per matrix; the weights are, per matrix, the median with a band
// between the percentiles a normal has 0.5 standard deviations either side of its mean (labelled, drawn over)
// and one at 1.5 (unlabelled), read from RankPoint::weightPercentiles at kWeightPercentiles. Those
// percentiles are checked against the normal's CDF, Phi(z) = erfc(-z / sqrt 2) / 2, to the two decimals
// they are given with.
TEST(Figures, RankDynamicsDrawsAlphaAsLinesAndTheWeightsAsPercentileBands) {
  RankDynamics d;
  for (const char* matrix : {"layers.0.q", "layers.1.down"}) {
    RankTrajectory t{matrix, {}};
    for (int64_t step : {100, 200, 300}) {
      RankPoint p;
      p.step = step;
      p.esdAlpha = 2.0 + static_cast<double>(step) / 100 + (t.matrix == "layers.1.down");
      for (size_t i = 0; i < p.weightPercentiles.size(); ++i)  // -0.4 .. 0.4, wider with each step
        p.weightPercentiles[i] = (static_cast<double>(i) - 4) * 0.1 * static_cast<double>(step) / 100;
      t.points.push_back(p);
    }
    d.trajectories.push_back(t);
  }
  const plot::Figure alpha = plot::rankDynamicsFigure(d, plot::RankQuantity::EsdAlpha);
  ASSERT_EQ(alpha.series.size(), 2u);
  EXPECT_EQ(alpha.series[0].y, (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(alpha.series[1].y, (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(alpha.series[1].label, "layers.1.down");
  EXPECT_NE(alpha.subtitle.find("3 checkpoints"), std::string::npos) << alpha.subtitle;

  const plot::Figure weights = plot::rankDynamicsFigure(d, plot::RankQuantity::Weights);
  ASSERT_EQ(weights.series.size(), 4u) << "two bands per matrix";
  const plot::Series &outer = weights.series[0], &inner = weights.series[1];
  EXPECT_TRUE(outer.label.empty()) << "the outer band has no legend row of its own";
  EXPECT_EQ(inner.label, "layers.0.q");
  EXPECT_EQ(weights.series[3].label, "layers.1.down");
  EXPECT_EQ(inner.x, (std::vector<double>{100, 200, 300}));
  for (size_t k = 0; k < 3; ++k) {
    const double scale = 0.1 * static_cast<double>(k + 1);
    EXPECT_NEAR(inner.y[k], 0.0, 1e-12) << "the median";
    EXPECT_NEAR(outer.y[k], 0.0, 1e-12);
    EXPECT_NEAR(inner.bandLow[k], -1 * scale, 1e-12) << "percentile 30.85";
    EXPECT_NEAR(inner.bandHigh[k], 1 * scale, 1e-12) << "percentile 69.15";
    EXPECT_NEAR(outer.bandLow[k], -3 * scale, 1e-12) << "percentile 6.68";
    EXPECT_NEAR(outer.bandHigh[k], 3 * scale, 1e-12) << "percentile 93.32";
  }
  const auto phi = [](double z) { return 100 * 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const std::array<double, 9> z = {-INFINITY, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, INFINITY};
  for (size_t i = 0; i < z.size(); ++i)
    EXPECT_NEAR(kWeightPercentiles[i], phi(z[i]), 0.005) << "percentile " << i;
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
