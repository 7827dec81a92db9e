// Figures to files: PNG (raster) and PDF (vector) through Cairo, SVG (vector, its text kept as <text>
// elements a journal's editor can change) through svg_canvas, all with the same drawFigure() layout as on
// screen and text measured by Cairo. Written atomically; the format comes from the extension.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "app/plot/figure.hpp"

namespace sharelens {

enum class ExportFormat { Png, Svg, Pdf };
ExportFormat exportFormatFor(const std::filesystem::path& path);  // throws a named Error for others

// A figure's size on paper. The layout is made in points (1/72 in): SVG and PDF pages are widthPt x heightPt,
// and PNG draws the same layout at `dpi` (pixels = points * dpi / 72), so a figure's text and lines keep
// their proportions in every format. fontScale multiplies the style's font sizes (13 pt text, 15 pt titles).
struct FigureSize {
  double widthPt = 1200, heightPt = 800;
  double dpi = 72;
  double fontScale = 1;
  int pixelWidth() const;  // the PNG's size
  int pixelHeight() const;
};

// The presets a journal asks for: "screen" (1200 x 800 pt at 72 dpi: what the app shows), "single"
// (one column, 3.5 x 2.6 in, 300 dpi, 8 pt text) and "double" (two columns, 7 x 3.5 in, 300 dpi, 9 pt text).
struct FigureSizePreset {
  std::string_view name, description;
  FigureSize size;
};
std::span<const FigureSizePreset> figureSizePresets();

// A preset's name or a custom size in inches, "WxH" ("3.3x2.5"), for --size. A custom size keeps the
// single-column dpi and text size. Throws a named Error naming `where` for anything else.
FigureSize parseFigureSize(std::string_view text, const std::string& where);

// Throws a named Error when the size cannot be drawn: out of range, or (`png`) a PNG over 20,000 pixels a
// side; dpi means nothing to SVG and PDF.
void validateFigureSize(const FigureSize& size, const std::string& where, bool png = true);

struct ExportOptions {
  FigureSize size;
  plot::Style style = plot::Style::light();
  std::optional<plot::Range> xView, yView;  // the zoom seen on screen
  std::vector<bool> hidden;                 // series switched off in the legend
  // What the figure is of, for the file name Save As offers (the training curves: their runs); empty: the
  // loaded model and its step.
  std::string subject;
};

// Returns the size written: the one asked for, taller where a legend that would cover the data in every
// corner needs room below it (plot::Style::legendBelowRatherThanOverData), unless that would pass the size
// limits (validateFigureSize).
FigureSize exportFigure(const plot::Figure& figure, const std::filesystem::path& path,
                        const ExportOptions& options = {});
// STEM.svg, STEM.png and STEM.pdf at the default options (a workflow's figures beside its report).
void exportFigureInEveryFormat(const plot::Figure& figure, const std::filesystem::path& stem);

// Several figures side by side on one page, each in an equal share of its width (the training view's loss
// and validation panels). The options' x range applies to every panel; its y range and hidden series to the
// first, the one whose zoom they were taken from.
FigureSize exportPanels(std::span<const plot::Figure> panels, const std::filesystem::path& path,
                        const ExportOptions& options = {});
// What the messages after an export say of the file: "PATH", or "PATH (3.50 x 3.29 in: taller than the 2.60
// in asked, to make room for its legend off the data)".
std::string exportedFileDescription(const std::filesystem::path& path, const FigureSize& asked,
                                    const FigureSize& written);

// The name Save As offers: DIR/<model>-step<N>-<view>.<ext> ("-stepN" left out for a model that is not a
// run's checkpoint, said once when the model's label already ends in it), the model label reduced to
// [A-Za-z0-9._-], and -2, -3, ... appended when the file exists, so an export never overwrites an earlier one
// unless the user names it.
std::filesystem::path defaultExportPath(const std::filesystem::path& dir, const std::string& model,
                                        int64_t step, const std::string& view, const std::string& extension);

}  // namespace sharelens
