#include "app/export/figure_export.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <cctype>
#include <cmath>
#include <functional>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

using namespace plot;

void setColor(cairo_t* cr, Rgb c, float alpha = 1.0f) {
  cairo_set_source_rgba(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0, alpha);
}

cairo_surface_t* imageOf(int width, int height, const std::function<Rgb(int x, int y)>& color) {
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_surface_flush(s);
  unsigned char* data = cairo_image_surface_get_data(s);
  const int stride = cairo_image_surface_get_stride(s);
  for (int y = 0; y < height; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + y * stride);
    for (int x = 0; x < width; ++x) {
      const Rgb c = color(x, y);
      row[x] = (uint32_t(c.r) << 16) | (uint32_t(c.g) << 8) | c.b;
    }
  }
  cairo_surface_mark_dirty(s);
  return s;
}

class CairoCanvas : public Canvas {
 public:
  explicit CairoCanvas(cairo_t* cr) : m_cr(cr) {
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  }
  void line(Point a, Point b, Rgb color, float width, bool dashed) override {
    stroke({a, b}, color, width, dashed);
  }
  void polyline(std::span<const Point> points, Rgb color, float width, bool dashed) override {
    stroke(std::vector<Point>(points.begin(), points.end()), color, width, dashed);
  }
  void rect(Point min, Point max, Rgb color, float width) override {
    cairo_rectangle(m_cr, min.x, min.y, max.x - min.x, max.y - min.y);
    setColor(m_cr, color);
    cairo_set_line_width(m_cr, width);
    cairo_stroke(m_cr);
  }
  void fillRect(Point min, Point max, Rgb color, float alpha) override {
    cairo_rectangle(m_cr, min.x, min.y, max.x - min.x, max.y - min.y);
    setColor(m_cr, color, alpha);
    cairo_fill(m_cr);
  }
  void fillQuad(Point a, Point b, Point c, Point d, Rgb color, float alpha) override {
    cairo_move_to(m_cr, a.x, a.y);
    cairo_line_to(m_cr, b.x, b.y);
    cairo_line_to(m_cr, c.x, c.y);
    cairo_line_to(m_cr, d.x, d.y);
    cairo_close_path(m_cr);
    setColor(m_cr, color, alpha);
    cairo_fill(m_cr);
  }
  void circle(Point c, float r, Rgb color) override {
    cairo_arc(m_cr, c.x, c.y, r, 0, 2 * M_PI);
    setColor(m_cr, color);
    cairo_fill(m_cr);
  }
  Point textSize(std::string_view text, float size) override {
    cairo_set_font_size(m_cr, size);
    cairo_text_extents_t e;
    const std::string s(text);
    cairo_text_extents(m_cr, s.c_str(), &e);
    cairo_font_extents_t f;
    cairo_font_extents(m_cr, &f);
    return {static_cast<float>(e.x_advance), static_cast<float>(f.ascent + f.descent)};
  }
  void text(Point at, std::string_view text, Rgb color, float size, Align h, Align v,
            bool vertical) override {
    const Point s = textSize(text, size);
    cairo_font_extents_t f;
    cairo_font_extents(m_cr, &f);
    const float w = vertical ? s.y : s.x, ht = vertical ? s.x : s.y;
    const float x = at.x - (h == Align::Center ? w / 2 : h == Align::End ? w : 0);
    const float y = at.y - (v == Align::Center ? ht / 2 : v == Align::End ? ht : 0);
    const std::string str(text);
    cairo_save(m_cr);
    setColor(m_cr, color);
    if (vertical) {
      cairo_translate(m_cr, x + f.ascent, y + s.x);
      cairo_rotate(m_cr, -M_PI / 2);
      cairo_move_to(m_cr, 0, 0);
    } else {
      cairo_move_to(m_cr, x, y + f.ascent);
    }
    cairo_show_text(m_cr, str.c_str());
    cairo_restore(m_cr);
  }
  void heatmapCells(Point min, Point max, const Heatmap& h) override {
    const double span = h.vmax > h.vmin ? h.vmax - h.vmin : 1.0;
    cairo_surface_t* image = imageOf(static_cast<int>(h.cols), static_cast<int>(h.rows), [&](int x, int y) {
      const float v = h.at(y, x);
      return colormapColor(h.colormap, std::isnan(v) ? NAN : (v - h.vmin) / span);
    });
    paintScaled(image, min, max);
  }
  void colorbar(Point min, Point max, Colormap c) override {
    cairo_surface_t* image =
        imageOf(1, 256, [&](int, int y) { return colormapTable(c)[static_cast<size_t>(255 - y)]; });
    paintScaled(image, min, max);
  }
  void pushClip(Point min, Point max) override {
    cairo_save(m_cr);
    cairo_rectangle(m_cr, min.x, min.y, max.x - min.x, max.y - min.y);
    cairo_clip(m_cr);
  }
  void popClip() override { cairo_restore(m_cr); }

 private:
  void stroke(const std::vector<Point>& points, Rgb color, float width, bool dashed) {
    if (points.size() < 2) return;
    cairo_move_to(m_cr, points[0].x, points[0].y);
    for (size_t i = 1; i < points.size(); ++i) cairo_line_to(m_cr, points[i].x, points[i].y);
    setColor(m_cr, color);
    cairo_set_line_width(m_cr, width);
    const double dash[] = {4.0, 4.0};
    cairo_set_dash(m_cr, dash, dashed ? 2 : 0, 0);
    cairo_stroke(m_cr);
    cairo_set_dash(m_cr, nullptr, 0, 0);
  }
  // Paints an image stretched into [min, max] with nearest-neighbour sampling (crisp cells in PNG, SVG, PDF).
  void paintScaled(cairo_surface_t* image, Point min, Point max) {
    cairo_save(m_cr);
    cairo_translate(m_cr, min.x, min.y);
    cairo_scale(m_cr, (max.x - min.x) / cairo_image_surface_get_width(image),
                (max.y - min.y) / cairo_image_surface_get_height(image));
    cairo_set_source_surface(m_cr, image, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(m_cr), CAIRO_FILTER_NEAREST);
    cairo_paint(m_cr);
    cairo_restore(m_cr);
    cairo_surface_destroy(image);
  }
  cairo_t* m_cr;
};

cairo_status_t writeToAtomicFile(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<AtomicFile*>(closure)->write(data, length);
  return CAIRO_STATUS_SUCCESS;
}

void draw(cairo_surface_t* surface, const Figure& figure, const ExportOptions& o) {
  cairo_t* cr = cairo_create(surface);
  CairoCanvas canvas(cr);
  const Point size{static_cast<float>(o.width), static_cast<float>(o.height)};
  const FigureLayout layout = layoutFigure(figure, canvas, o.style, {0, 0}, size, o.xView, o.yView, o.hidden);
  drawFigure(canvas, figure, layout, o.style, o.hidden);
  cairo_destroy(cr);
}

}  // namespace

ExportFormat exportFormatFor(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".png") return ExportFormat::Png;
  if (ext == ".svg") return ExportFormat::Svg;
  if (ext == ".pdf") return ExportFormat::Pdf;
  throw Error({.what = "unknown export format",
               .where = path.string(),
               .expected = ".png, .svg or .pdf",
               .found = ext.empty() ? "no extension" : ext});
}

void exportFigure(const Figure& figure, const std::filesystem::path& path, const ExportOptions& options) {
  const ExportFormat format = exportFormatFor(path);
  AtomicFile file(path);
  cairo_surface_t* surface = nullptr;
  switch (format) {
    case ExportFormat::Png:
      surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, options.width, options.height);
      break;
    case ExportFormat::Svg:
      surface = cairo_svg_surface_create_for_stream(writeToAtomicFile, &file, options.width, options.height);
      break;
    case ExportFormat::Pdf:
      surface = cairo_pdf_surface_create_for_stream(writeToAtomicFile, &file, options.width, options.height);
      break;
  }
  draw(surface, figure, options);
  cairo_status_t status = CAIRO_STATUS_SUCCESS;
  if (format == ExportFormat::Png)
    status = cairo_surface_write_to_png_stream(surface, writeToAtomicFile, &file);
  cairo_surface_finish(surface);  // SVG and PDF write on finish
  if (status == CAIRO_STATUS_SUCCESS) status = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error(
        {.what = "figure export failed", .where = path.string(), .found = cairo_status_to_string(status)});
  file.commit();
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
  if (safe.empty()) safe = "model";
  const std::string stem = safe + (step >= 0 ? "-" + std::to_string(step) : "") + "-" + view;
  std::filesystem::path path = dir / (stem + "." + extension);
  for (int n = 2; std::filesystem::exists(path); ++n)
    path = dir / (stem + "-" + std::to_string(n) + "." + extension);
  return path;
}

}  // namespace sharelens
