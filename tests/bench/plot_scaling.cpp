// plot_scaling SCALING.json OUT.{png,svg,pdf}...
// The README's cost-growth figure (issue 16, item 6): time and peak resident memory of the full analysis
// (spectra + head and layer difference maps) against the model's parameter count, log-log, ShareLens beside
// PyTorch, drawn by ShareLens's own figure export. SCALING.json is what tests/bench/bench_scaling.sh writes:
//   {"shapes": [{"shape": "gpt2-124m", "parameters": 124439808,
//                "sides": {"ShareLens": {"seconds": 28.0, "peak_kib": 912345}, "PyTorch float32": {...}}}]}
#include <algorithm>
#include <iostream>
#include <map>
#include <vector>

#include "app/export/figure_export.hpp"
#include "app/plot/colormap.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"

using namespace sharelens;

namespace {

struct Point {
  double parameters, seconds, peakGib;
};

// side name -> its points, in ascending parameter count
std::map<std::string, std::vector<Point>> readSides(const std::filesystem::path& path) {
  const Json root = readJsonFile(path);
  const JsonObject top(root, path.string());
  std::map<std::string, std::vector<Point>> sides;
  const Json& shapes = top.requireArray("shapes");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const JsonObject shape(shapes[i], path.string() + ": shapes[" + std::to_string(i) + "]");
    const double parameters = static_cast<double>(shape.requireInt("parameters", 1));
    for (const auto& [name, value] : shape.requireObject("sides").raw().items()) {
      const JsonObject side(value, shape.where() + ": sides." + name);
      sides[name].push_back(
          {parameters, side.requireNumber("seconds"), side.requireNumber("peak_kib") / (1024.0 * 1024.0)});
    }
  }
  for (auto& [name, points] : sides)
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.parameters < b.parameters; });
  return sides;
}

plot::Figure panel(const std::map<std::string, std::vector<Point>>& sides, const std::string& title,
                   const std::string& yLabel, double Point::*value) {
  plot::Figure f;
  f.title = title;
  f.xLabel = "parameters (millions)";
  f.yLabel = yLabel;
  f.xScale = f.yScale = plot::Scale::Log10;
  int index = 0;
  for (const auto& [name, points] : sides) {
    plot::Series s;
    s.label = name;
    s.style = plot::SeriesStyle::LineAndMarkers;
    s.color = plot::seriesColor(index++);
    for (const Point& p : points) {
      s.x.push_back(p.parameters / 1e6);
      s.y.push_back(p.*value);
    }
    f.series.push_back(std::move(s));
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: plot_scaling SCALING.json OUT.{png,svg,pdf}...\n";
    return 2;
  }
  try {
    const auto sides = readSides(argv[1]);
    const std::vector<plot::Figure> panels = {
        panel(sides, "Time of the full analysis", "seconds", &Point::seconds),
        panel(sides, "Peak resident memory", "GiB", &Point::peakGib)};
    ExportOptions options;
    options.size = parseFigureSize("double", "plot_scaling");
    for (int i = 2; i < argc; ++i) {
      exportPanels(panels, argv[i], options);
      std::cout << argv[i] << "\n";
    }
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
