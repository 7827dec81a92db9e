// Where a figure's legend goes (DESIGN.md section 6): the corner of the plot that covers the fewest drawn
// points and marker lines, or, for an export, below the plot when every corner would cover some.
#pragma once

#include <vector>

#include "app/plot/figure.hpp"

namespace sharelens::plot {

class FigureMemo;

namespace detail {

// Fills l.legend (one row per named series with points), and for a legend below the plot moves l.plotMax up.
void placeLegend(const Figure& f, Canvas& canvas, const Style& style, const std::vector<bool>& hidden,
                 FigureLayout& l, FigureMemo* memo);

}  // namespace detail
}  // namespace sharelens::plot
