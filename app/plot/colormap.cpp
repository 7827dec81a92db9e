#include "app/plot/colormap.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sharelens::plot {
namespace {

struct Lab {
  double l, a, b;
};

double toLinear(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double toGamma(double c) { return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055; }
double labF(double t) { return t > 216.0 / 24389.0 ? std::cbrt(t) : (24389.0 / 27.0 * t + 16.0) / 116.0; }
double labFInverse(double t) { return t * t * t > 216.0 / 24389.0 ? t * t * t : (116.0 * t - 16.0) / (24389.0 / 27.0); }

// sRGB (D65) <-> CIELAB
Lab toLab(uint32_t hex) {
  const double r = toLinear(((hex >> 16) & 0xff) / 255.0), g = toLinear(((hex >> 8) & 0xff) / 255.0),
               b = toLinear((hex & 0xff) / 255.0);
  const double x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const double y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const double z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  const double fx = labF(x), fy = labF(y), fz = labF(z);
  return {116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}

Rgb toRgb(const Lab& lab) {
  const double fy = (lab.l + 16) / 116, fx = fy + lab.a / 500, fz = fy - lab.b / 200;
  const double x = labFInverse(fx) * 0.95047, y = labFInverse(fy), z = labFInverse(fz) * 1.08883;
  const double r = 3.2406 * x - 1.5372 * y - 0.4986 * z, g = -0.9689 * x + 1.8758 * y + 0.0415 * z,
               b = 0.0557 * x - 0.2040 * y + 1.0570 * z;
  auto channel = [](double c) { return static_cast<uint8_t>(std::lround(std::clamp(toGamma(std::clamp(c, 0.0, 1.0)), 0.0, 1.0) * 255)); };
  return {channel(r), channel(g), channel(b)};
}

std::array<Rgb, 256> interpolate(const std::vector<uint32_t>& anchors) {
  std::vector<Lab> lab;
  for (uint32_t a : anchors) lab.push_back(toLab(a));
  std::array<Rgb, 256> table{};
  for (int i = 0; i < 256; ++i) {
    const double t = i / 255.0 * static_cast<double>(lab.size() - 1);
    const size_t k = std::min(static_cast<size_t>(t), lab.size() - 2);
    const double f = t - static_cast<double>(k);
    table[static_cast<size_t>(i)] = toRgb({lab[k].l + f * (lab[k + 1].l - lab[k].l), lab[k].a + f * (lab[k + 1].a - lab[k].a),
                                           lab[k].b + f * (lab[k + 1].b - lab[k].b)});
  }
  return table;
}

constexpr std::string_view kNames[] = {"viridis", "magma", "diverging"};

}  // namespace

std::string_view colormapName(Colormap c) { return kNames[static_cast<int>(c)]; }

std::optional<Colormap> parseColormap(std::string_view name) {
  for (Colormap c : kAllColormaps)
    if (colormapName(c) == name) return c;
  return std::nullopt;
}

const std::array<Rgb, 256>& colormapTable(Colormap c) {
  static const std::array<Rgb, 256> viridis = interpolate({0x440154, 0x3b528b, 0x21918c, 0x5ec962, 0xfde725});
  static const std::array<Rgb, 256> magma = interpolate({0x000004, 0x3b0f70, 0x8c2981, 0xde4968, 0xfe9f6d, 0xfcfdbf});
  static const std::array<Rgb, 256> diverging = interpolate({0x2166ac, 0x67a9cf, 0xf7f7f7, 0xef8a62, 0xb2182b});
  switch (c) {
    case Colormap::Magma: return magma;
    case Colormap::Diverging: return diverging;
    default: return viridis;
  }
}

Rgb colormapColor(Colormap c, double unit) {
  if (std::isnan(unit)) return {128, 128, 128};
  const int i = static_cast<int>(std::lround(std::clamp(unit, 0.0, 1.0) * 255.0));
  return colormapTable(c)[static_cast<size_t>(i)];
}

Rgb seriesColor(int index) {
  static constexpr Rgb palette[] = {{0, 114, 178},  {230, 159, 0}, {0, 158, 115}, {204, 121, 167},
                                    {86, 180, 233}, {213, 94, 0},  {240, 228, 66}, {150, 150, 150}};
  return palette[static_cast<size_t>(index) % (sizeof palette / sizeof palette[0])];
}

}  // namespace sharelens::plot
