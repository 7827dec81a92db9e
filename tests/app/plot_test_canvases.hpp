// What the plot tests share: canvases that measure or record what a figure draws, an experiment report for
// forest plots, and reading a file whole.
#pragma once

#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "app/export/cairo_canvas.hpp"  // alignedTextOrigin
#include "app/plot/figure.hpp"
#include "core/experiment_report.hpp"

// Beside Canvas, in plot: the tests use both unqualified.
namespace sharelens::plot {

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

// An experiment's report with the arms a forest plot shows: "shared", the reference "baseline" and its A/A
// arm "baseline-aa", their numbers left for the test to fill.
inline ExperimentReport forestReport(const std::string& name) {
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

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace sharelens::plot
