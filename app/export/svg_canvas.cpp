#include "app/export/svg_canvas.hpp"

#include <cstdio>

namespace sharelens {
namespace {

using namespace plot;

// A coordinate or length with at most 2 decimals and no trailing zeros ("12.5", "3").
std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  std::string s = buffer;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string color(Rgb c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
  return buffer;
}

std::string escapeXml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string opacity(const char* attribute, float alpha) {
  return alpha < 1.0f ? std::string(" ") + attribute + "=\"" + num(alpha) + "\"" : "";
}

}  // namespace

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k)
      group = (group << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

SvgCanvas::SvgCanvas(double widthPt, double heightPt)
    : m_width(widthPt),
      m_height(heightPt),
      m_measureSurface(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1)),
      m_measureContext(cairo_create(m_measureSurface)),
      m_measure(std::make_unique<CairoCanvas>(m_measureContext)) {}

SvgCanvas::~SvgCanvas() {
  m_measure.reset();
  cairo_destroy(m_measureContext);
  cairo_surface_destroy(m_measureSurface);
}

void SvgCanvas::stroke(std::span<const Point> points, Rgb c, float width, bool dashed) {
  if (points.size() < 2) return;
  m_body += "<polyline fill=\"none\" stroke=\"" + color(c) + "\" stroke-width=\"" + num(width) +
            "\" stroke-linejoin=\"round\"" + (dashed ? " stroke-dasharray=\"4 4\"" : "") + " points=\"";
  for (size_t i = 0; i < points.size(); ++i)
    m_body += (i ? " " : "") + num(points[i].x) + "," + num(points[i].y);
  m_body += "\"/>\n";
}

void SvgCanvas::line(Point a, Point b, Rgb c, float width, bool dashed) {
  const Point points[] = {a, b};
  stroke(points, c, width, dashed);
}

void SvgCanvas::polyline(std::span<const Point> points, Rgb c, float width, bool dashed) {
  stroke(points, c, width, dashed);
}

void SvgCanvas::columnBand(std::span<const ColumnSpan> columns, Rgb c, float width) {
  const std::vector<Point> polygon = bandPolygon(columns, width);
  if (polygon.empty()) return;
  m_body += "<polygon fill=\"" + color(c) + "\" points=\"";
  for (size_t i = 0; i < polygon.size(); ++i)
    m_body += (i ? " " : "") + num(polygon[i].x) + "," + num(polygon[i].y);
  m_body += "\"/>\n";
}

void SvgCanvas::rect(Point min, Point max, Rgb c, float width) {
  m_body += "<rect x=\"" + num(min.x) + "\" y=\"" + num(min.y) + "\" width=\"" + num(max.x - min.x) +
            "\" height=\"" + num(max.y - min.y) + "\" fill=\"none\" stroke=\"" + color(c) +
            "\" stroke-width=\"" + num(width) + "\"/>\n";
}

void SvgCanvas::fillRect(Point min, Point max, Rgb c, float alpha) {
  m_body += "<rect x=\"" + num(min.x) + "\" y=\"" + num(min.y) + "\" width=\"" + num(max.x - min.x) +
            "\" height=\"" + num(max.y - min.y) + "\" fill=\"" + color(c) + "\"" +
            opacity("fill-opacity", alpha) + "/>\n";
}

void SvgCanvas::fillQuad(Point a, Point b, Point c, Point d, Rgb fill, float alpha) {
  m_body += "<polygon points=\"" + num(a.x) + "," + num(a.y) + " " + num(b.x) + "," + num(b.y) + " " +
            num(c.x) + "," + num(c.y) + " " + num(d.x) + "," + num(d.y) + "\" fill=\"" + color(fill) + "\"" +
            opacity("fill-opacity", alpha) + "/>\n";
}

void SvgCanvas::circle(Point c, float r, Rgb fill) {
  m_body += "<circle cx=\"" + num(c.x) + "\" cy=\"" + num(c.y) + "\" r=\"" + num(r) + "\" fill=\"" +
            color(fill) + "\"/>\n";
}

Point SvgCanvas::textSize(std::string_view text, float size) {
  return m_measure->textSize(text, size);
}

void SvgCanvas::text(Point at, std::string_view text, Rgb c, float size, Align h, Align v, bool vertical) {
  const Point s = textSize(text, size);
  const float ascent = m_measure->textAscent(size);
  const Point o = alignedTextOrigin(at, s, h, v, vertical);
  const std::string placement =
      vertical ? "transform=\"translate(" + num(o.x + ascent) + "," + num(o.y + s.x) + ") rotate(-90)\""
               : "x=\"" + num(o.x) + "\" y=\"" + num(o.y + ascent) + "\"";
  m_body += "<text " + placement + " font-size=\"" + num(size) + "\" fill=\"" + color(c) + "\">" +
            escapeXml(text) + "</text>\n";
}

void SvgCanvas::image(Point min, Point max, cairo_surface_t* surface) {
  const std::string png = pngBytes(surface);
  cairo_surface_destroy(surface);
  m_body += "<image x=\"" + num(min.x) + "\" y=\"" + num(min.y) + "\" width=\"" + num(max.x - min.x) +
            "\" height=\"" + num(max.y - min.y) +
            "\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated;image-rendering:crisp-edges\" "
            "xlink:href=\"data:image/png;base64," +
            base64(png) + "\"/>\n";
}

void SvgCanvas::heatmapCells(Point min, Point max, const Heatmap& h) {
  image(min, max, heatmapImage(h));
}

void SvgCanvas::colorbar(Point min, Point max, Colormap c) {
  image(min, max, colorbarImage(c));
}

void SvgCanvas::pushClip(Point min, Point max) {
  const std::string id = "clip" + std::to_string(++m_clips);
  m_body += "<clipPath id=\"" + id + "\"><rect x=\"" + num(min.x) + "\" y=\"" + num(min.y) + "\" width=\"" +
            num(max.x - min.x) + "\" height=\"" + num(max.y - min.y) +
            "\"/></clipPath>\n<g clip-path=\"url(#" + id + ")\">\n";
  ++m_openClips;
}

void SvgCanvas::popClip() {
  if (m_openClips == 0) return;
  m_body += "</g>\n";
  --m_openClips;
}

std::string SvgCanvas::document() const {
  std::string doc =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
      "version=\"1.1\" width=\"" +
      num(m_width) + "pt\" height=\"" + num(m_height) + "pt\" viewBox=\"0 0 " + num(m_width) + " " +
      num(m_height) + "\">\n<g font-family=\"DejaVu Sans\">\n" + m_body;
  for (int i = 0; i < m_openClips; ++i) doc += "</g>\n";
  return doc + "</g>\n</svg>\n";
}

}  // namespace sharelens
