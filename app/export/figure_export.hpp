// Figures to files through Cairo: PNG (raster), SVG and PDF (vector), with the same drawFigure() layout as
// on screen. Written atomically; the format comes from the extension.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "app/plot/figure.hpp"

namespace sharelens {

enum class ExportFormat { Png, Svg, Pdf };
ExportFormat exportFormatFor(const std::filesystem::path& path);  // throws a named Error for others

struct ExportOptions {
  int width = 1200, height = 800;  // pixels (PNG) or points (SVG, PDF)
  plot::Style style = plot::Style::light();
  std::optional<plot::Range> xView, yView;  // the zoom seen on screen
  std::vector<bool> hidden;                 // series switched off in the legend
};

void exportFigure(const plot::Figure& figure, const std::filesystem::path& path,
                  const ExportOptions& options = {});

// The name Save As offers: DIR/<model>-<step>-<view>.<ext> ("step" left out for a model that is not a run's
// checkpoint), the model label reduced to [A-Za-z0-9._-], and -2, -3, ... appended when the file exists, so
// an export never overwrites an earlier one unless the user names it.
std::filesystem::path defaultExportPath(const std::filesystem::path& dir, const std::string& model,
                                        int64_t step, const std::string& view, const std::string& extension);

}  // namespace sharelens
