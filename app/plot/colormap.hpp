// Colormaps as 256-entry lookup tables: viridis and magma (sequential, perceptually ordered) and a
// blue-white-red diverging map. Each is interpolated in CIELAB between a few anchor colours of the
// well-known maps, so the tables are smooth and computed here rather than copied.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sharelens::plot {

struct Rgb {
  uint8_t r, g, b;
};

enum class Colormap : uint8_t { Viridis, Magma, Diverging };
inline constexpr Colormap kAllColormaps[] = {Colormap::Viridis, Colormap::Magma, Colormap::Diverging};
std::string_view colormapName(Colormap c);
std::optional<Colormap> parseColormap(std::string_view name);

const std::array<Rgb, 256>& colormapTable(Colormap c);
Rgb colormapColor(Colormap c, double unit);  // unit in [0, 1], clamped; NaN -> grey

// Series colours for line plots (distinguishable, colour-blind friendly order).
Rgb seriesColor(int index);

}  // namespace sharelens::plot
