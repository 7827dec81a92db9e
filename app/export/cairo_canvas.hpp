// The plot Canvas drawn with Cairo (PNG and PDF export), and the Cairo pieces the SVG writer shares with it:
// text measured in DejaVu Sans, and heatmap cells and colour bars as images of one pixel per cell.
#pragma once

#include <cairo.h>

#include <string>

#include "app/plot/figure.hpp"

namespace sharelens {

class CairoCanvas : public plot::Canvas {
 public:
  explicit CairoCanvas(cairo_t* cr);
  void line(plot::Point a, plot::Point b, plot::Rgb color, float width, bool dashed) override;
  void polyline(std::span<const plot::Point> points, plot::Rgb color, float width, bool dashed) override;
  void rect(plot::Point min, plot::Point max, plot::Rgb color, float width) override;
  void fillRect(plot::Point min, plot::Point max, plot::Rgb color, float alpha) override;
  void fillQuad(plot::Point a, plot::Point b, plot::Point c, plot::Point d, plot::Rgb color,
                float alpha) override;
  void circle(plot::Point c, float r, plot::Rgb color) override;
  void columnBand(std::span<const plot::ColumnSpan> columns, plot::Rgb color, float width) override;
  plot::Point textSize(std::string_view text, float size) override;  // {advance, ascent + descent}
  float textAscent(float size);                                      // baseline below the text's top
  void text(plot::Point at, std::string_view text, plot::Rgb color, float size, plot::Align h, plot::Align v,
            bool vertical) override;
  void heatmapCells(plot::Point min, plot::Point max, const plot::Heatmap& h) override;
  void colorbar(plot::Point min, plot::Point max, plot::Colormap c) override;
  void pushClip(plot::Point min, plot::Point max) override;
  void popClip() override;

 private:
  void stroke(std::span<const plot::Point> points, plot::Rgb color, float width, bool dashed);
  void paintScaled(cairo_surface_t* image, plot::Point min, plot::Point max);  // takes the image
  cairo_t* m_cr;
};

// Where text starts for drawFigure's alignment rules: the top-left corner of its box (rotated boxes are
// `vertical`, reading bottom to top). Shared so that SVG text lands where Cairo draws it.
plot::Point alignedTextOrigin(plot::Point at, plot::Point size, plot::Align h, plot::Align v, bool vertical);

// Images of one pixel per cell (RGB24; the caller destroys them).
cairo_surface_t* heatmapImage(const plot::Heatmap& h);  // cols x rows, row 0 on top
// width x height pixels (at most cols x rows), each the area-weighted mean colour of the cells it covers.
cairo_surface_t* reducedHeatmapImage(const plot::Heatmap& h, int width, int height);
cairo_surface_t* colorbarImage(plot::Colormap c);  // 1 x 256, high on top

std::string pngBytes(cairo_surface_t* image);  // the image as a PNG file's bytes

}  // namespace sharelens
