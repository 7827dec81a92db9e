// An SVG 1.1 document drawn through the plot Canvas. Lines, shapes and text are elements (text stays <text>
// in DejaVu Sans: searchable, and editable in Inkscape or Illustrator); heatmap cells and colour bars are
// embedded PNG images of one pixel per cell, drawn without smoothing. Text is measured by Cairo in the
// font the document names, so the layout matches the PNG and PDF exports.
#pragma once

#include <cairo.h>

#include <memory>
#include <string>

#include "app/export/cairo_canvas.hpp"
#include "app/plot/figure.hpp"

namespace sharelens {

class SvgCanvas : public plot::Canvas {
 public:
  SvgCanvas(double widthPt, double heightPt);  // the page, in points; drawing units are points
  ~SvgCanvas() override;
  SvgCanvas(const SvgCanvas&) = delete;
  SvgCanvas& operator=(const SvgCanvas&) = delete;

  void line(plot::Point a, plot::Point b, plot::Rgb color, float width, bool dashed) override;
  void polyline(std::span<const plot::Point> points, plot::Rgb color, float width, bool dashed) override;
  void rect(plot::Point min, plot::Point max, plot::Rgb color, float width) override;
  void fillRect(plot::Point min, plot::Point max, plot::Rgb color, float alpha) override;
  void fillQuad(plot::Point a, plot::Point b, plot::Point c, plot::Point d, plot::Rgb color,
                float alpha) override;
  void circle(plot::Point c, float r, plot::Rgb color) override;
  void columnBand(std::span<const plot::ColumnSpan> columns, plot::Rgb color, float width) override;
  plot::Point textSize(std::string_view text, float size) override;
  void text(plot::Point at, std::string_view text, plot::Rgb color, float size, plot::Align h, plot::Align v,
            bool vertical) override;
  void heatmapCells(plot::Point min, plot::Point max, const plot::Heatmap& h) override;
  void colorbar(plot::Point min, plot::Point max, plot::Colormap c) override;
  void pushClip(plot::Point min, plot::Point max) override;
  void popClip() override;

  std::string document() const;  // the whole file: header, body, open groups closed

 private:
  void image(plot::Point min, plot::Point max, cairo_surface_t* image);  // takes the image
  void stroke(std::span<const plot::Point> points, plot::Rgb color, float width, bool dashed);

  double m_width, m_height;
  cairo_surface_t* m_measureSurface;  // a 1 x 1 image: Cairo's text metrics need a context
  cairo_t* m_measureContext;
  std::unique_ptr<CairoCanvas> m_measure;
  std::string m_body;
  int m_clips = 0, m_openClips = 0;
};

// RFC 4648 base64, for images embedded as data: URIs.
std::string base64(std::string_view bytes);

}  // namespace sharelens
