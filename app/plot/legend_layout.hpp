// Where a figure's legend goes (DESIGN.md section 6): the corner of the plot that covers the fewest drawn
// points and marker lines, or, for an export, below the plot when every corner would cover some; a legend
// shared by several panels, below them all; and how a legend is drawn.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "app/plot/figure.hpp"

namespace sharelens::plot {

class FigureMemo;

namespace detail {

// Fills l.legend (one row per named series with points), and for a legend below the plot moves l.plotMax up.
void placeLegend(const Figure& f, Canvas& canvas, const Style& style, const std::vector<bool>& hidden,
                 FigureLayout& l, FigureMemo* memo);

}  // namespace detail

// A legend on its own, `width` wide (an export's legend shared by its panels, below them all): the rows of
// `f`'s named series with points, in lines as a legend below the data is laid out, centred, from y = 0 (the
// box's top) to `height`. nullopt when an entry is wider than `width`, or none is named.
struct LegendBlock {
  std::vector<FigureLayout::LegendRow> rows;
  float height = 0;
};
std::optional<LegendBlock> legendBlock(const Figure& f, Canvas& canvas, const Style& style, float width);

// The rows' box, swatches and labels; a hidden series' row greyed.
void drawLegend(Canvas& canvas, const Figure& f, std::span<const FigureLayout::LegendRow> rows,
                const Style& style, const std::vector<bool>& hidden);

}  // namespace sharelens::plot
