#include "app/export/figure_export.hpp"

#include <cairo-pdf.h>
#include <cairo.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "app/export/cairo_canvas.hpp"
#include "app/export/svg_canvas.hpp"
#include "app/plot/figure_memo.hpp"
#include "app/plot/legend_layout.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace sharelens {
namespace {

using namespace plot;

cairo_status_t writeToAtomicFile(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<AtomicFile*>(closure)->write(data, length);
  return CAIRO_STATUS_SUCCESS;
}

constexpr double kPointsPerInch = 72;
constexpr int kMaxPixels = 20000;

// The single-column preset's dpi and text, kept by custom sizes.
constexpr FigureSize kSingleColumn{3.5 * kPointsPerInch, 2.6 * kPointsPerInch, 300, 8.0 / 13.0};

constexpr FigureSizePreset kPresets[] = {
    {"screen", "1200 x 800 pt, 72 dpi, 13 pt text (as on screen)", {1200, 800, 72, 1}},
    {"single", "one column: 3.5 x 2.6 in, 300 dpi, 8 pt text", kSingleColumn},
    {"double",
     "two columns: 7 x 3.5 in, 300 dpi, 9 pt text",
     {7 * kPointsPerInch, 3.5 * kPointsPerInch, 300, 9.0 / 13.0}},
};

Style exportStyle(const ExportOptions& o) {
  Style style = o.style;
  style.squareHeatmapCells = true;
  style.legendBelowRatherThanOverData = true;
  style.fontSize *= static_cast<float>(o.size.fontScale);
  style.titleSize *= static_cast<float>(o.size.fontScale);
  return style;
}

// One legend for several panels (the Training view's loss beside its validation loss name the same runs in
// the same colours), below them all across the page, instead of one per panel, whose share of the width long
// run names outgrow: a figure of each named series with points once, in the order first met, and the first
// panel's hidden series (the ones switched off on screen) greyed in it.
struct SharedLegend {
  Figure figure;
  std::vector<bool> hidden;
  LegendBlock block;                         // laid out at the page's width, from y = 0
  static constexpr float kGap = 4;           // between the panels and the legend's box
  static constexpr float kLeastPanels = 36;  // points: the panels' least height (the smallest page's)
};

// Whether two series' legend rows look alike (drawLegend: a line, or a bar's swatch).
bool sameSwatch(const Series& a, const Series& b) {
  const bool bars = a.style == SeriesStyle::Bars;
  return bars == (b.style == SeriesStyle::Bars) && a.color == b.color && a.dashed == b.dashed &&
         (!bars || a.hatched == b.hatched);
}

// nullopt for one panel, for panels without legends, or when a name is drawn differently in two panels, or
// an entry is wider than the page: each panel then keeps its own legend.
std::optional<SharedLegend> sharedLegend(std::span<const Figure> panels, Canvas& canvas, const Style& style,
                                         const ExportOptions& o) {
  if (panels.size() < 2) return std::nullopt;
  SharedLegend shared;
  for (size_t p = 0; p < panels.size(); ++p) {
    if (!panels[p].legend || panels[p].heatmap) return std::nullopt;
    for (size_t i = 0; i < panels[p].series.size(); ++i) {
      const Series& s = panels[p].series[i];
      if (s.label.empty() || s.y.empty()) continue;
      const auto same = std::find_if(shared.figure.series.begin(), shared.figure.series.end(),
                                     [&](const Series& e) { return e.label == s.label; });
      if (same == shared.figure.series.end()) {
        shared.figure.series.push_back({.label = s.label,
                                        .x = {0},
                                        .y = {0},
                                        .color = s.color,
                                        .style = s.style,
                                        .dashed = s.dashed,
                                        .hatched = s.hatched});
        shared.hidden.push_back(false);  // set below, from the first panel's, by name
      } else if (!sameSwatch(*same, s)) {
        return std::nullopt;
      }
    }
  }
  // A run switched off on screen (in the first panel, whose state the options carry) is off in every panel
  // and greyed in the legend.
  for (size_t i = 0; i < panels[0].series.size() && i < o.hidden.size(); ++i)
    if (o.hidden[i])
      for (size_t k = 0; k < shared.figure.series.size(); ++k)
        if (shared.figure.series[k].label == panels[0].series[i].label) shared.hidden[k] = true;
  auto block = legendBlock(shared.figure, canvas, style, static_cast<float>(o.size.widthPt));
  if (!block) return std::nullopt;
  shared.block = std::move(*block);
  return shared;
}

// The page's height for panels that share a legend: the one asked for, grown where the legend would leave
// the panels under three quarters of it (or under kLeastPanels).
double heightWithSharedLegend(double asked, const SharedLegend& legend) {
  return std::max(asked, std::max(0.75 * asked, double{SharedLegend::kLeastPanels}) + legend.block.height +
                             SharedLegend::kGap);
}

// Each panel's hidden series: with a shared legend, the series the first panel hides, by name, in every
// panel; without, the options' for the first panel and none for the others.
std::vector<std::vector<bool>> hiddenByPanel(std::span<const Figure> panels, const ExportOptions& o,
                                             const SharedLegend* legend) {
  std::vector<std::vector<bool>> hidden(panels.size());
  if (!panels.empty()) hidden[0] = o.hidden;
  if (!legend) return hidden;
  for (size_t p = 0; p < panels.size(); ++p) {
    hidden[p].assign(panels[p].series.size(), false);
    for (size_t i = 0; i < panels[p].series.size(); ++i)
      for (size_t k = 0; k < legend->figure.series.size(); ++k)
        if (legend->hidden[k] && legend->figure.series[k].label == panels[p].series[i].label)
          hidden[p][i] = true;
  }
  return hidden;
}

// Lays the panels out in points on `canvas` (already scaled to its device), side by side, above the legend
// they share if they share one (taking the rest of the page's height, unless that would leave them under
// kLeastPanels, as on a page the size limits kept from growing: then each keeps its own), and hands each
// panel's layout to `use` (with its style, hidden series and memo), then the shared legend with its rows
// moved below the panels.
template <class Use, class UseLegend>
void layOutInPoints(Canvas& canvas, std::span<const Figure> panels, const ExportOptions& o, Use&& use,
                    UseLegend&& useLegend) {
  const Style style = exportStyle(o);
  const float pageHeight = static_cast<float>(o.size.heightPt);
  auto legend = sharedLegend(panels, canvas, style, o);
  if (legend && pageHeight - legend->block.height - SharedLegend::kGap < SharedLegend::kLeastPanels)
    legend.reset();
  const std::vector<std::vector<bool>> hidden = hiddenByPanel(panels, o, legend ? &*legend : nullptr);
  std::vector<Figure> withoutLegends;  // the panels, when their legend is drawn once below them
  if (legend) {
    withoutLegends.assign(panels.begin(), panels.end());
    for (Figure& f : withoutLegends) f.legend = false;
    panels = withoutLegends;
  }
  const float width =
      static_cast<float>(o.size.widthPt) / static_cast<float>(std::max<size_t>(1, panels.size()));
  const Point size{width, legend ? pageHeight - legend->block.height - SharedLegend::kGap : pageHeight};
  for (size_t i = 0; i < panels.size(); ++i) {
    const bool first = i == 0;
    FigureMemo memo;  // the traces the legend's corner is chosen from are the ones drawn
    memo.bind(panels[i]);
    const FigureLayout layout = layoutFigure(panels[i], canvas, style, {width * static_cast<float>(i), 0},
                                             size, o.xView, first ? o.yView : std::nullopt, hidden[i], &memo);
    use(panels[i], layout, style, hidden[i], memo);
  }
  if (!legend) return;
  for (FigureLayout::LegendRow& row : legend->block.rows) {
    row.min.y += size.y + SharedLegend::kGap;
    row.max.y += size.y + SharedLegend::kGap;
  }
  useLegend(*legend, style);
}

void drawInPoints(Canvas& canvas, std::span<const Figure> panels, const ExportOptions& o) {
  layOutInPoints(
      canvas, panels, o,
      [&](const Figure& f, const FigureLayout& l, const Style& style, const std::vector<bool>& hidden,
          FigureMemo& memo) { drawFigure(canvas, f, l, style, hidden, &memo); },
      [&](const SharedLegend& legend, const Style& style) {
        drawLegend(canvas, legend.figure, legend.block.rows, style, legend.hidden);
      });
}

// The page's height: the one asked for, grown by what a legend shared by the panels needs
// (heightWithSharedLegend), or else by what the panels' legends need to go below the data rather than over
// it (FigureLayout::heightWanted, the largest among the panels), laid out again until none needs more (a
// plot squeezed to its minimum height under-reports the need once; three passes at most). Laid out in
// points, as every format is.
double grownHeight(std::span<const Figure> panels, ExportOptions o) {
  {
    SvgCanvas measure(o.size.widthPt, o.size.heightPt);
    if (const auto legend = sharedLegend(panels, measure, exportStyle(o), o))
      return heightWithSharedLegend(o.size.heightPt, *legend);
  }
  for (int pass = 0; pass < 3; ++pass) {
    SvgCanvas measure(o.size.widthPt, o.size.heightPt);
    float wanted = 0;
    layOutInPoints(
        measure, panels, o,
        [&](const Figure&, const FigureLayout& l, const Style&, const std::vector<bool>&, FigureMemo&) {
          wanted = std::max(wanted, l.heightWanted);
        },
        [](const SharedLegend&, const Style&) {});
    if (!(wanted > 0)) break;
    o.size.heightPt += std::ceil(wanted);
  }
  return o.size.heightPt;
}

void drawOnCairo(cairo_surface_t* surface, std::span<const Figure> panels, const ExportOptions& o,
                 double scale) {
  cairo_t* cr = cairo_create(surface);
  cairo_scale(cr, scale, scale);
  CairoCanvas canvas(cr);
  drawInPoints(canvas, panels, o);
  cairo_destroy(cr);
}

std::optional<double> parsePositive(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v))
    return std::nullopt;
  return v;
}

}  // namespace

ExportFormat exportFormatFor(const std::filesystem::path& path) {
  const std::string ext = asciiLower(path.extension().string());
  if (ext == ".png") return ExportFormat::Png;
  if (ext == ".svg") return ExportFormat::Svg;
  if (ext == ".pdf") return ExportFormat::Pdf;
  throw Error({.what = "unknown export format",
               .where = path.string(),
               .expected = ".png, .svg or .pdf",
               .found = ext.empty() ? "no extension" : ext});
}

int FigureSize::pixelWidth() const {
  return static_cast<int>(std::lround(widthPt * dpi / kPointsPerInch));
}

int FigureSize::pixelHeight() const {
  return static_cast<int>(std::lround(heightPt * dpi / kPointsPerInch));
}

std::span<const FigureSizePreset> figureSizePresets() {
  return kPresets;
}

FigureSize parseFigureSize(std::string_view text, const std::string& where) {
  for (const FigureSizePreset& p : kPresets)
    if (p.name == text) return p.size;
  const size_t x = text.find('x');
  const auto w = x == std::string_view::npos ? std::nullopt : parsePositive(text.substr(0, x));
  const auto h = x == std::string_view::npos ? std::nullopt : parsePositive(text.substr(x + 1));
  if (!w || !h)
    throw Error({.what = "unknown figure size",
                 .where = where,
                 .expected = "screen, single, double, or width x height in inches like 3.3x2.5",
                 .found = std::string(text)});
  FigureSize size = kSingleColumn;
  size.widthPt = *w * kPointsPerInch;
  size.heightPt = *h * kPointsPerInch;
  validateFigureSize(size, where, /*png=*/false);  // the pixel limit is the PNG export's to check
  return size;
}

void validateFigureSize(const FigureSize& size, const std::string& where, bool png) {
  auto fail = [&](const std::string& what, const std::string& expected, const std::string& found) {
    throw Error({.what = what,
                 .where = where,
                 .expected = expected,
                 .found = found,
                 .hint = "choose a smaller size or dpi"});
  };
  if (!(size.widthPt >= 36 && size.heightPt >= 36 && size.widthPt <= 14400 && size.heightPt <= 14400))
    fail("figure size out of range", "0.5 to 200 in (36 to 14,400 pt) a side",
         std::to_string(size.widthPt) + " x " + std::to_string(size.heightPt) + " pt");
  if (!(size.dpi >= 10 && size.dpi <= 2400)) fail("dpi out of range", "10 to 2400", std::to_string(size.dpi));
  if (!(size.fontScale >= 0.1 && size.fontScale <= 10))
    fail("font scale out of range", "0.1 to 10", std::to_string(size.fontScale));
  if (png && (size.pixelWidth() > kMaxPixels || size.pixelHeight() > kMaxPixels))
    fail("PNG too large", "at most 20,000 pixels a side",
         std::to_string(size.pixelWidth()) + " x " + std::to_string(size.pixelHeight()) + " pixels");
}

FigureSize exportFigure(const Figure& figure, const std::filesystem::path& path,
                        const ExportOptions& options) {
  return exportPanels(std::span<const Figure>(&figure, 1), path, options);
}

void exportFigureInEveryFormat(const plot::Figure& figure, const std::filesystem::path& stem) {
  for (const char* ext : {".svg", ".png", ".pdf"}) exportFigure(figure, stem.string() + ext, ExportOptions{});
}

std::string exportedFileDescription(const std::filesystem::path& path, const FigureSize& asked,
                                    const FigureSize& written) {
  if (written.heightPt == asked.heightPt) return path.string();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                " (%.2f x %.2f in: taller than the %.2f in asked, to make room for its legend off the data)",
                written.widthPt / kPointsPerInch, written.heightPt / kPointsPerInch,
                asked.heightPt / kPointsPerInch);
  return path.string() + buf;
}

FigureSize exportPanels(std::span<const Figure> panels, const std::filesystem::path& path,
                        const ExportOptions& asked) {
  const ExportFormat format = exportFormatFor(path);
  validateFigureSize(asked.size, path.string(), format == ExportFormat::Png);
  ExportOptions options = asked;
  options.size.heightPt = grownHeight(panels, asked);
  try {
    validateFigureSize(options.size, path.string(), format == ExportFormat::Png);
  } catch (const Error&) {
    options.size = asked.size;  // past the size limits grown: the page asked for, its legend where it fits
  }
  AtomicFile file(path);
  if (format == ExportFormat::Svg) {
    SvgCanvas canvas(options.size.widthPt, options.size.heightPt);
    drawInPoints(canvas, panels, options);
    const std::string doc = canvas.document();
    file.write(doc.data(), doc.size());
    file.commit();
    return options.size;
  }
  cairo_surface_t* surface = format == ExportFormat::Png
                                 ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, options.size.pixelWidth(),
                                                              options.size.pixelHeight())
                                 : cairo_pdf_surface_create_for_stream(
                                       writeToAtomicFile, &file, options.size.widthPt, options.size.heightPt);
  drawOnCairo(surface, panels, options,
              format == ExportFormat::Png ? options.size.dpi / kPointsPerInch : 1.0);
  cairo_status_t status = CAIRO_STATUS_SUCCESS;
  if (format == ExportFormat::Png)
    status = cairo_surface_write_to_png_stream(surface, writeToAtomicFile, &file);
  cairo_surface_finish(surface);  // PDF writes on finish
  if (status == CAIRO_STATUS_SUCCESS) status = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error(
        {.what = "figure export failed", .where = path.string(), .found = cairo_status_to_string(status)});
  file.commit();
  return options.size;
}

std::filesystem::path defaultExportPath(const std::filesystem::path& dir, const std::string& model,
                                        int64_t step, const std::string& view, const std::string& extension) {
  std::string safe;
  for (char c : model) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (keep)
      safe.push_back(c);
    else if (!safe.empty() && safe.back() != '_')
      safe.push_back('_');
  }
  while (!safe.empty() && (safe.back() == '_' || safe.back() == '.')) safe.pop_back();
  // A checkpoint's label already says its step ("baseline @ step 15"): said once, as "-step15".
  if (step >= 0) {
    const std::string said = "_step_" + std::to_string(step);
    if (safe.size() > said.size() && safe.ends_with(said)) safe.resize(safe.size() - said.size());
  }
  if (safe.empty()) safe = "model";
  const std::string stem = safe + (step >= 0 ? "-step" + std::to_string(step) : "") + "-" + view;
  std::filesystem::path path = dir / (stem + "." + extension);
  for (int n = 2; std::filesystem::exists(path); ++n)
    path = dir / (stem + "-" + std::to_string(n) + "." + extension);
  return path;
}

}  // namespace sharelens
