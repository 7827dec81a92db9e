// The Save As dialog's page size: a journal preset (screen, single or double column) or a custom size in
// inches, with dpi and font scale. The choice lasts for the session, so a set of figures shares one size.
#pragma once

#include "app/export/figure_export.hpp"

namespace sharelens::gui {

struct FigureSizeChoice {
  int preset = 0;  // an index into figureSizePresets(), or the count for "custom"
  FigureSize size = figureSizePresets()[0].size;
};

void drawFigureSizePicker(FigureSizeChoice& choice);

}  // namespace sharelens::gui
