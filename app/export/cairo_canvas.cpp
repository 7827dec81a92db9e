#include "app/export/cairo_canvas.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

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

cairo_status_t appendToString(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

CairoCanvas::CairoCanvas(cairo_t* cr) : m_cr(cr) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  // Text is measured with the font's own advances, not ones rounded to the surface's pixels: an image
  // surface (PNG, and the SVG canvas's measuring context) would otherwise measure "1e-3" at 14 points where
  // the PDF surface measures 13.49, and the three formats would thin ticks and place labels differently.
  cairo_font_options_t* options = cairo_font_options_create();
  cairo_get_font_options(cr, options);
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  cairo_set_font_options(cr, options);
  cairo_font_options_destroy(options);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
}

void CairoCanvas::line(Point a, Point b, Rgb color, float width, bool dashed) {
  const Point points[] = {a, b};
  stroke(points, color, width, dashed);
}

void CairoCanvas::polyline(std::span<const Point> points, Rgb color, float width, bool dashed) {
  stroke(points, color, width, dashed);
}

void CairoCanvas::columnBand(std::span<const ColumnSpan> columns, Rgb color, float width) {
  const std::vector<Point> polygon = bandPolygon(columns, width);
  if (polygon.empty()) return;
  cairo_move_to(m_cr, polygon.front().x, polygon.front().y);
  for (const Point& v : polygon) cairo_line_to(m_cr, v.x, v.y);
  cairo_close_path(m_cr);
  setColor(m_cr, color);
  cairo_fill(m_cr);
}

void CairoCanvas::rect(Point min, Point max, Rgb color, float width) {
  cairo_rectangle(m_cr, min.x, min.y, max.x - min.x, max.y - min.y);
  setColor(m_cr, color);
  cairo_set_line_width(m_cr, width);
  cairo_stroke(m_cr);
}

void CairoCanvas::fillRect(Point min, Point max, Rgb color, float alpha) {
  cairo_rectangle(m_cr, min.x, min.y, max.x - min.x, max.y - min.y);
  setColor(m_cr, color, alpha);
  cairo_fill(m_cr);
}

void CairoCanvas::fillQuad(Point a, Point b, Point c, Point d, Rgb color, float alpha) {
  cairo_move_to(m_cr, a.x, a.y);
  cairo_line_to(m_cr, b.x, b.y);
  cairo_line_to(m_cr, c.x, c.y);
  cairo_line_to(m_cr, d.x, d.y);
  cairo_close_path(m_cr);
  setColor(m_cr, color, alpha);
  cairo_fill(m_cr);
}

void CairoCanvas::circle(Point c, float r, Rgb color) {
  cairo_arc(m_cr, c.x, c.y, r, 0, 2 * M_PI);
  setColor(m_cr, color);
  cairo_fill(m_cr);
}

Point CairoCanvas::textSize(std::string_view text, float size) {
  cairo_set_font_size(m_cr, size);
  cairo_text_extents_t e;
  const std::string s(text);
  cairo_text_extents(m_cr, s.c_str(), &e);
  cairo_font_extents_t f;
  cairo_font_extents(m_cr, &f);
  return {static_cast<float>(e.x_advance), static_cast<float>(f.ascent + f.descent)};
}

float CairoCanvas::textAscent(float size) {
  cairo_set_font_size(m_cr, size);
  cairo_font_extents_t f;
  cairo_font_extents(m_cr, &f);
  return static_cast<float>(f.ascent);
}

Point alignedTextOrigin(Point at, Point size, Align h, Align v, bool vertical) {
  const float w = vertical ? size.y : size.x, ht = vertical ? size.x : size.y;
  return {at.x - (h == Align::Center ? w / 2
                  : h == Align::End  ? w
                                     : 0),
          at.y - (v == Align::Center ? ht / 2
                  : v == Align::End  ? ht
                                     : 0)};
}

void CairoCanvas::text(Point at, std::string_view text, Rgb color, float size, Align h, Align v,
                       bool vertical) {
  const Point s = textSize(text, size);
  const float ascent = textAscent(size);
  const Point o = alignedTextOrigin(at, s, h, v, vertical);
  const std::string str(text);
  cairo_save(m_cr);
  setColor(m_cr, color);
  if (vertical) {
    cairo_translate(m_cr, o.x + ascent, o.y + s.x);
    cairo_rotate(m_cr, -M_PI / 2);
    cairo_move_to(m_cr, 0, 0);
  } else {
    cairo_move_to(m_cr, o.x, o.y + ascent);
  }
  cairo_show_text(m_cr, str.c_str());
  cairo_restore(m_cr);
}

// Into a PNG, a map with more cells than pixels along an axis is first averaged down to the pixels along it
// (reducedHeatmapImage), so that each pixel shows its cells' mean colour, as the screen does
// (imgui_canvas.cpp), and is then drawn nearest like any other; a PDF keeps every cell.
void CairoCanvas::heatmapCells(Point min, Point max, const Heatmap& h) {
  double width = max.x - min.x, height = max.y - min.y;  // in the target's pixels below
  cairo_user_to_device_distance(m_cr, &width, &height);
  const bool raster = cairo_surface_get_type(cairo_get_target(m_cr)) == CAIRO_SURFACE_TYPE_IMAGE;
  const int columns =
      static_cast<int>(std::min<double>(static_cast<double>(h.cols), std::ceil(std::abs(width))));
  const int rows =
      static_cast<int>(std::min<double>(static_cast<double>(h.rows), std::ceil(std::abs(height))));
  const bool reduced = columns < h.cols || rows < h.rows;
  paintScaled(
      raster && reduced && columns > 0 && rows > 0 ? reducedHeatmapImage(h, columns, rows) : heatmapImage(h),
      min, max);
}

void CairoCanvas::colorbar(Point min, Point max, Colormap c) {
  paintScaled(colorbarImage(c), min, max);
}

void CairoCanvas::pushClip(Point min, Point max) {
  cairo_save(m_cr);
  cairo_rectangle(m_cr, min.x, min.y, max.x - min.x, max.y - min.y);
  cairo_clip(m_cr);
}

void CairoCanvas::popClip() {
  cairo_restore(m_cr);
}

void CairoCanvas::stroke(std::span<const Point> points, Rgb color, float width, bool dashed) {
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

// Paints an image stretched into [min, max] with nearest-neighbour sampling (crisp cells in PNG and PDF).
void CairoCanvas::paintScaled(cairo_surface_t* image, Point min, Point max) {
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

cairo_surface_t* heatmapImage(const Heatmap& h) {
  return imageOf(static_cast<int>(h.cols), static_cast<int>(h.rows),
                 [&](int x, int y) { return heatmapCellColor(h, h.at(y, x)); });
}

cairo_surface_t* reducedHeatmapImage(const Heatmap& h, int width, int height) {
  // Each cell spans [c, c + 1) of the columns; pixel j of `width` spans [j, j + 1) * cols / width of them.
  // A cell's colour goes to the one or two pixels it overlaps, weighted by the overlap in pixels: the
  // weights of a pixel's cells add up to 1.
  auto spread = [](int64_t cell, int64_t cells, int pixels, auto&& add) {
    const double perCell = static_cast<double>(pixels) / static_cast<double>(cells);  // <= 1
    const double a = static_cast<double>(cell) * perCell, b = static_cast<double>(cell + 1) * perCell;
    for (int j = static_cast<int>(a); j < pixels && j < b; ++j) {
      const double overlap = std::min(b, j + 1.0) - std::max(a, static_cast<double>(j));
      if (overlap > 0) add(j, static_cast<float>(overlap));
    }
  };
  std::vector<float> image(static_cast<size_t>(width) * height * 3, 0.0f),
      row(static_cast<size_t>(width) * 3);
  for (int64_t r = 0; r < h.rows; ++r) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (int64_t c = 0; c < h.cols; ++c) {
      const Rgb color = heatmapCellColor(h, h.at(r, c));
      spread(c, h.cols, width, [&](int j, float w) {
        float* px = &row[static_cast<size_t>(3 * j)];
        px[0] += w * color.r, px[1] += w * color.g, px[2] += w * color.b;
      });
    }
    spread(r, h.rows, height, [&](int i, float w) {
      float* out = &image[static_cast<size_t>(3) * width * i];
      for (size_t k = 0; k < row.size(); ++k) out[k] += w * row[k];
    });
  }
  auto channel = [](float v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); };
  return imageOf(width, height, [&](int x, int y) {
    const float* px = &image[3 * (static_cast<size_t>(y) * width + x)];
    return Rgb{channel(px[0]), channel(px[1]), channel(px[2])};
  });
}

cairo_surface_t* colorbarImage(Colormap c) {
  return imageOf(1, 256, [&](int, int y) { return colormapTable(c)[static_cast<size_t>(255 - y)]; });
}

std::string pngBytes(cairo_surface_t* image) {
  std::string bytes;
  cairo_surface_write_to_png_stream(image, appendToString, &bytes);
  return bytes;
}

}  // namespace sharelens
