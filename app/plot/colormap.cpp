#include "app/plot/colormap.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <vector>

#include "core/assets.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"

namespace sharelens::plot {
namespace {

struct Lab {
  double l, a, b;
};

double toLinear(double c) {
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}
double toGamma(double c) {
  return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055;
}
double labF(double t) {
  return t > 216.0 / 24389.0 ? std::cbrt(t) : (24389.0 / 27.0 * t + 16.0) / 116.0;
}
double labFInverse(double t) {
  return t * t * t > 216.0 / 24389.0 ? t * t * t : (116.0 * t - 16.0) / (24389.0 / 27.0);
}

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
  auto channel = [](double c) {
    return static_cast<uint8_t>(std::lround(std::clamp(toGamma(std::clamp(c, 0.0, 1.0)), 0.0, 1.0) * 255));
  };
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
    table[static_cast<size_t>(i)] =
        toRgb({lab[k].l + f * (lab[k + 1].l - lab[k].l), lab[k].a + f * (lab[k + 1].a - lab[k].a),
               lab[k].b + f * (lab[k + 1].b - lab[k].b)});
  }
  return table;
}

constexpr std::string_view kNames[] = {"viridis", "magma", "diverging"};

// "#rrggbb" -> 0xrrggbb; nullopt for anything else.
std::optional<uint32_t> parseHexColour(const std::string& s) {
  if (s.size() != 7 || s[0] != '#') return std::nullopt;
  uint32_t v = 0;
  for (size_t i = 1; i < 7; ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return v;
}

}  // namespace

std::vector<uint32_t> readColormapAnchors(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file))
    throw Error({.what = "colour map missing",
                 .where = file.string(),
                 .expected = "the shipped colour map",
                 .hint = "ShareLens finds assets/ beside its executable or through SHARELENS_ASSETS"});
  const Json doc = readJsonFile(file);
  const JsonObject map(doc, file.string());
  const Json& anchors = map.requireArray("anchors");
  if (anchors.size() < 2)
    map.fail("anchors", "too few anchors", "at least 2", std::to_string(anchors.size()));
  std::vector<uint32_t> out;
  for (size_t i = 0; i < anchors.size(); ++i) {
    const auto colour = anchors[i].is_string() ? parseHexColour(anchors[i].get<std::string>()) : std::nullopt;
    if (!colour)
      map.fail("anchors", "not a colour at index " + std::to_string(i), "\"#rrggbb\"", anchors[i].dump(),
               "write each anchor as a hex colour like \"#440154\"");
    out.push_back(*colour);
  }
  return out;
}

namespace {

struct Tables {
  std::array<std::array<Rgb, 256>, std::size(kNames)> byMap;
};

Tables readTables() {
  Tables t;
  for (size_t i = 0; i < std::size(kNames); ++i)
    t.byMap[i] = interpolate(
        readColormapAnchors(assetsDirectory() / "colormaps" / (std::string(kNames[i]) + ".json")));
  return t;
}

// Read once per process. A static's initialisation is thread-safe and, when it throws, is tried again on the
// next call; once done, each lookup (one per heatmap cell) is a plain read.
const Tables& tables() {
  static const Tables loaded = readTables();
  return loaded;
}

}  // namespace

std::string_view colormapName(Colormap c) {
  return kNames[static_cast<int>(c)];
}

std::optional<Colormap> parseColormap(std::string_view name) {
  for (Colormap c : kAllColormaps)
    if (colormapName(c) == name) return c;
  return std::nullopt;
}

void loadColormaps() {
  tables();
}

const std::array<Rgb, 256>& colormapTable(Colormap c) {
  return tables().byMap[static_cast<size_t>(c)];
}

Rgb colormapColor(Colormap c, double unit) {
  if (std::isnan(unit)) return {128, 128, 128};
  const int i = static_cast<int>(std::lround(std::clamp(unit, 0.0, 1.0) * 255.0));
  return colormapTable(c)[static_cast<size_t>(i)];
}

Rgb seriesColor(int index) {
  // Okabe & Ito's eight colours (black as grey, for dark backgrounds) and two more for ten distinct runs.
  static constexpr Rgb palette[] = {{0, 114, 178},  {230, 159, 0}, {0, 158, 115},  {204, 121, 167},
                                    {86, 180, 233}, {213, 94, 0},  {240, 228, 66}, {150, 150, 150},
                                    {117, 84, 184}, {150, 100, 60}};
  static_assert(sizeof palette / sizeof palette[0] == kSeriesColors);
  return palette[static_cast<size_t>(index) % kSeriesColors];
}

}  // namespace sharelens::plot
