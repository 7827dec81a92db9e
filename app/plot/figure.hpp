// A figure as data (DESIGN.md section 6): series, axes, labels, markers, an optional heatmap with its
// colormap and colour bar. drawFigure() lays it out and draws it through a Canvas; the ImGui canvas draws it
// on screen (with interaction added by plot_widget), the Cairo canvas exports it to PNG, SVG and PDF, so the
// exported figure has exactly the title, ticks, legend and colour bar seen on screen.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/plot/axis.hpp"
#include "app/plot/colormap.hpp"

namespace sharelens::plot {

struct Point {
  float x = 0, y = 0;
};

// One pixel column of a dense line: at x (the column's centre) the line reaches from top to bottom (pixels,
// y down, top <= bottom).
struct ColumnSpan {
  float x = 0, top = 0, bottom = 0;
};

enum class SeriesStyle : uint8_t { Line, Markers, LineAndMarkers, Bars };

struct Series {
  std::string label;
  std::vector<double> x, y;  // x sorted ascending for lines (decimation relies on it)
  Rgb color{0, 114, 178};
  SeriesStyle style = SeriesStyle::Line;
  float width = 1.6f;
  bool dashed = false;
  std::vector<double> error;  // +- half-width per point: error bars (bars and markers); empty: none
  std::vector<double> bandLow, bandHigh;  // a shaded band along the line (mean +- 1 sd); empty: none
  double barWidth = 0.8;                  // Bars: in x units, centred on x
  bool hatched = false;                   // Bars: diagonal hatching (a baseline beside its model, as in the
                                          // low-rank sharing paper's Figure 4)
  // 0, or a value its builder changes whenever it changes this series' values (and no other series of the
  // figure shares): the on-screen memo then keys on it instead of hashing every value each frame.
  uint64_t revision = 0;
};

struct Marker {  // a vertical line at x (an effective-rank marker, a chosen S)
  double x = 0;
  std::string label;
  Rgb color{200, 60, 60};
};

struct Heatmap {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;                // rows x cols, row-major; NaN = no value
  std::string missingMeaning = "no value";  // what a NaN cell means, for its tooltip
  Colormap colormap = Colormap::Viridis;
  double vmin = 0, vmax = 1;
  std::string colorbarLabel;
  std::vector<std::string> rowLabels, colLabels;  // optional; shown when they fit
  // Categorical: values are indices into these names (a topology's blocks), each cell coloured by the
  // distinct run palette and explained by a legend of swatches instead of a colour bar.
  std::vector<std::string> categories;
  // Exports keep cells square (Style::squareHeatmapCells), as a matrix is read; a map whose few columns are
  // kinds beside many rows (a topology's attention and FFN) fills the width instead.
  bool squareCells = true;
  float at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
  // The identity of the map's content (FNV-1a of its size and values), computed on first use and kept:
  // texture caches key on it, so two different maps never share a texture and an unchanged one is uploaded
  // once.
  uint64_t fingerprint() const;
  mutable uint64_t cachedFingerprint = 0;  // 0: not computed yet
};

// A cell's colour: the colormap over [vmin, vmax], or a category's palette colour; NaN is grey.
Rgb heatmapCellColor(const Heatmap& h, float value);
// Category `index` of `count` (a topology's blocks): the distinct series palette while it has a colour per
// category, else spread over `spread`; out of range is grey. The topology map and graph colour blocks alike.
Rgb categoryColor(int64_t index, int64_t count, Colormap spread = Colormap::Viridis);

struct Figure {
  std::string title, subtitle;
  std::string xLabel, yLabel;
  Scale xScale = Scale::Linear, yScale = Scale::Linear;
  std::optional<Range> xRange, yRange;  // default: fitted to the data
  bool xIntegers = false;               // x is a count (atoms, layers): ticks on whole numbers only
  bool yDown = false;  // y grows downwards (a topology graph lists layer 0 first, at the top)
  // Hover names the one point nearest the mouse (a graph's node), not every series at the mouse's x.
  bool hoverNearestOnly = false;
  std::vector<Series> series;
  std::vector<Marker> markers;
  std::optional<Heatmap> heatmap;  // drawn as cells; the axes are then column and row indices
  bool legend = true;
  std::vector<std::string>
      xCategories;  // x positions 0..n-1 are these categories (bar charts); ticks thinned to fit
};

enum class Align : uint8_t { Start, Center, End };

// What drawFigure needs from a renderer. Coordinates are pixels, y down.
class Canvas {
 public:
  virtual ~Canvas() = default;
  virtual void line(Point a, Point b, Rgb color, float width, bool dashed = false) = 0;
  virtual void polyline(std::span<const Point> points, Rgb color, float width, bool dashed = false) = 0;
  virtual void rect(Point min, Point max, Rgb color, float width) = 0;
  virtual void fillRect(Point min, Point max, Rgb color, float alpha = 1.0f) = 0;
  virtual void fillQuad(Point a, Point b, Point c, Point d, Rgb color, float alpha) = 0;  // convex, in order
  virtual void circle(Point center, float radius, Rgb color) = 0;
  // A line with more points than pixel columns, as the extent it reaches in each column (x ascending),
  // widened by width / 2 above and below and joined column to column: one filled band. It covers the
  // pixels that stroking every point would, without the zigzag through each column's extremes, whose
  // overlapping strokes fill each of those pixels several times over.
  virtual void columnBand(std::span<const ColumnSpan> columns, Rgb color, float width) = 0;
  virtual void text(Point at, std::string_view text, Rgb color, float size, Align h, Align v,
                    bool vertical = false) = 0;
  virtual Point textSize(std::string_view text, float size) = 0;
  virtual void heatmapCells(Point min, Point max, const Heatmap& heatmap) = 0;  // the whole grid into the box
  virtual void colorbar(Point min, Point max, Colormap colormap) = 0;           // bottom = low, top = high
  virtual void pushClip(Point min, Point max) = 0;
  virtual void popClip() = 0;
};

struct Style {
  Rgb background{255, 255, 255}, foreground{30, 30, 30}, grid{225, 225, 225}, frame{120, 120, 120};
  float fontSize = 13.0f, titleSize = 15.0f;
  bool squareHeatmapCells = false;  // exports: the data area shrinks so that a heatmap's cells are square
  // Exports: a legend that would cover data (or a marker) in every corner goes below the plot instead, in as
  // many columns as fit or packed into lines where that takes fewer, and the data area gives up the room;
  // where that would leave the data area under half its height, the export grows taller instead
  // (FigureLayout::heightWanted). On screen it stays in a corner, where it can be clicked to hide a series
  // and does not move the axes while a run adds points.
  bool legendBelowRatherThanOverData = false;
  static Style light();
  static Style dark();
};

class FigureMemo;  // app/plot/figure_memo.hpp

// Where everything goes for a figure drawn into the box [origin, origin + size].
struct FigureLayout {
  Point origin, size;
  Point plotMin, plotMax;  // the data area
  AxisTransform x, y;      // data -> unit; unit -> pixels via plotMin/plotMax
  bool yDown = false;      // heatmaps: row 0 at the top
  std::optional<Point> colorbarMin, colorbarMax;
  struct LegendRow {
    size_t series;
    Point min, max;
  };
  std::vector<LegendRow> legend;  // clickable legend rows (series index and box), in the emptiest corner
  std::vector<std::string> titleLines, subtitleLines;  // wrapped to the figure's width
  // Exports: how much taller the figure would have to be for its legend to go below the data instead of
  // over it (Style::legendBelowRatherThanOverData) with the data area as tall as it is; 0 when it went below
  // or nothing covers.
  float heightWanted = 0;
  std::vector<std::string> yLabelLines;  // the y label wrapped to the plot's height (drawn turned)
  Point toPixel(double xv, double yv) const;
  double xAt(float px) const;
  double yAt(float py) const;
};

// xView / yView override the figure's ranges (zoom and pan). A memo bound to the figure this frame keeps the
// passes over its points from one frame to the next; without one, everything is computed.
FigureLayout layoutFigure(const Figure& figure, Canvas& canvas, const Style& style, Point origin, Point size,
                          const std::optional<Range>& xView = std::nullopt,
                          const std::optional<Range>& yView = std::nullopt,
                          const std::vector<bool>& hidden = {}, FigureMemo* memo = nullptr);
void drawFigure(Canvas& canvas, const Figure& figure, const FigureLayout& layout, const Style& style,
                const std::vector<bool>& hidden = {}, FigureMemo* memo = nullptr);

// The fitted data ranges (heatmaps: cell indices), before any zoom.
Range fittedXRange(const Figure& figure, const std::vector<bool>& hidden = {});
// With `visibleX`, only the points whose x lies in it count: y refits to what a horizontal zoom shows.
Range fittedYRange(const Figure& figure, const std::vector<bool>& hidden = {},
                   const std::optional<Range>& visibleX = std::nullopt);
// The same from each shown series' extent as `extent(i)` gives it, which must be seriesXExtent /
// seriesYExtent of series i (FigureMemo keeps them between frames: a new point costs its own series' pass).
using SeriesExtent = std::function<RangeAccumulator(size_t series)>;
Range fittedXRange(const Figure& figure, const std::vector<bool>& hidden, const SeriesExtent& extent);
Range fittedYRange(const Figure& figure, const std::vector<bool>& hidden,
                   const std::optional<Range>& visibleX, const SeriesExtent& extent);
// A series' x values, and its y values with its band and error bars (with `visibleX`, at the points whose x
// lies in it), on an axis of this scale.
RangeAccumulator seriesXExtent(const Series& series, Scale scale);
RangeAccumulator seriesYExtent(const Series& series, Scale scale, const std::optional<Range>& visibleX);

// A series as it is drawn in a layout, over the visible x range.
// - Sparse (at most two visible points per pixel column): its points, joined in order.
// - Dense: each pixel column's lowest and highest value (`columns`), so that spikes survive. Spread (the
//   median column spans kBandSpan pixels or more: a noisy loss), it is drawn as the band of those columns.
//   Otherwise (a smooth curve, which a band's hard edge would stair-step) as a line through each column's
//   extremes in the order they come, simplified to within kPathTolerance pixels.
struct Trace {
  static constexpr float kBandSpan = 2.0f, kPathTolerance = 0.25f;
  std::vector<Point> points;  // the line's vertices (dense: through the columns' extremes, simplified; none
                              // for a band, unless its series is dashed and so drawn as this path)
  std::vector<ColumnSpan> columns;  // dense: x ascending, one per column that holds a point
  bool band = false;                // dense and spread: drawn as Canvas::columnBand(columns)
  size_t pointsTraced = 0;          // the series' points in the traced index range (the visible ones and the
                            // neighbours beyond, undrawable ones too): the legend's weight of its columns
  bool dense() const { return !columns.empty(); }
};
// What seriesTrace needs to know of a series' values whatever the layout: whether its x ascend (finite and
// never falling: the visible points and each column's are then found by bisection), and whether every point
// is finite, and every y positive (every point is then drawable on a linear y axis, or on a log one, and
// columns are scanned without checking each point). One pass over the values, kept by FigureMemo while they
// stay the same.
struct SeriesShape {
  bool ascending = false, finite = false, positive = false;
};
SeriesShape seriesShape(const Series& series);
Trace seriesTrace(const Series& series, const FigureLayout& layout, const SeriesShape& shape);
Trace seriesTrace(const Series& series, const FigureLayout& layout);  // with the series' shape found anew

// The outline of Canvas::columnBand's band: each column's span widened by width / 2 above and below, at the
// column's centre, with the first and last spans repeated at their columns' outer edges so that the band
// covers its end columns whole.
std::vector<ColumnSpan> bandOutline(std::span<const ColumnSpan> columns, float width);
// The same band as one closed polygon: along the outline's tops left to right, back along its bottoms (for
// canvases that fill polygons: Cairo, SVG). Empty when there are no columns.
std::vector<Point> bandPolygon(std::span<const ColumnSpan> columns, float width);

}  // namespace sharelens::plot
