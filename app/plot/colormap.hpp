// Colormaps as 256-entry lookup tables: viridis and magma (sequential, perceptually ordered) and a
// blue-white-red diverging map. Their anchor colours ship as assets (assets/colormaps/<name>.json,
// "sharelens.colormap/1": name, kind, anchors as "#rrggbb", source); each table is interpolated in CIELAB
// between the anchors, so it is smooth and computed here rather than copied.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace sharelens::plot {

struct Rgb {
  uint8_t r, g, b;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

enum class Colormap : uint8_t { Viridis, Magma, Diverging };
inline constexpr Colormap kAllColormaps[] = {Colormap::Viridis, Colormap::Magma, Colormap::Diverging};
std::string_view colormapName(Colormap c);
std::optional<Colormap> parseColormap(std::string_view name);

// Reads every shipped colour map once; a missing or malformed file is a named Error. The GUI and `export`
// call it before drawing anything, so that the tables below never fail while drawing.
void loadColormaps();
// One colour map file's anchors as 0xrrggbb, validated (at least two, each "#rrggbb"); named Errors
// otherwise.
std::vector<uint32_t> readColormapAnchors(const std::filesystem::path& file);
const std::array<Rgb, 256>& colormapTable(Colormap c);  // loadColormaps() on first use
Rgb colormapColor(Colormap c, double unit);             // unit in [0, 1], clamped; NaN -> grey

// Series colours for line plots (distinguishable, colour-blind friendly order).
inline constexpr int kSeriesColors = 10;  // distinct colours before seriesColor repeats
Rgb seriesColor(int index);

}  // namespace sharelens::plot
