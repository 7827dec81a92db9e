// The Canvas over an ImDrawList, with heatmaps and colour bars as GL textures (one texel per cell: a
// 1000 x 1000 map is one quad, not a million; magnified cells nearest, a minified map its mip levels'
// means). UI thread only.
#pragma once

#include <imgui.h>

#include <map>
#include <tuple>

#include "app/plot/figure.hpp"
#include "app/plot/figure_raster.hpp"

namespace sharelens::plot {

// GL textures for heatmaps, keyed by the heatmap's content fingerprint, colormap and value range; evicts what
// a frame did not use.
class TextureCache {
 public:
  using Key = std::tuple<uint64_t, int, double, double, int64_t, int64_t>;
  static Key keyOf(const Heatmap& h);
  ~TextureCache();
  ImTextureID heatmap(const Heatmap& h);
  ImTextureID colorbar(Colormap c);
  // A white disc whose alpha is its coverage, with every mip level down to 1 x 1: a marker is one quad of it
  // at any radius, its edge smoothed by trilinear filtering.
  ImTextureID disc();
  static constexpr float kDiscFill = 0.9f;  // the disc's diameter over the texture's side
  void endFrame();  // frees textures and pictures not used since the previous endFrame
  // Counts the textures made: a figure's picture drawn before a texture was made is drawn again
  // (a freed texture's name may come back for other content).
  uint64_t generation() const { return m_generation; }
  // The pictures of on-screen figures (figure_raster.hpp).
  FigureRasters& rasters() { return m_rasters; }
  const FigureRasters& rasters() const { return m_rasters; }

 private:
  struct Entry {
    unsigned texture = 0;
    bool used = true;
  };
  std::map<Key, Entry> m_textures;
  std::map<int, unsigned> m_colorbars;
  unsigned m_disc = 0;
  uint64_t m_generation = 0;
  FigureRasters m_rasters;
};

class ImGuiCanvas : public Canvas {
 public:
  ImGuiCanvas(ImDrawList* list, TextureCache& textures) : m_list(list), m_textures(textures) {}
  void line(Point a, Point b, Rgb color, float width, bool dashed) override;
  void polyline(std::span<const Point> points, Rgb color, float width, bool dashed) override;
  void rect(Point min, Point max, Rgb color, float width) override;
  void fillRect(Point min, Point max, Rgb color, float alpha) override;
  void fillQuad(Point a, Point b, Point c, Point d, Rgb color, float alpha) override;
  void circle(Point center, float radius, Rgb color) override;
  void columnBand(std::span<const ColumnSpan> columns, Rgb color, float width) override;
  void text(Point at, std::string_view text, Rgb color, float size, Align h, Align v, bool vertical) override;
  Point textSize(std::string_view text, float size) override;
  void heatmapCells(Point min, Point max, const Heatmap& heatmap) override;
  void colorbar(Point min, Point max, Colormap colormap) override;
  void pushClip(Point min, Point max) override;
  void popClip() override;

 private:
  ImDrawList* m_list;
  TextureCache& m_textures;
};

ImU32 toImColor(Rgb c, float alpha = 1.0f);

// A GL texture of width x height RGBA pixels (rgba: width * height * 4 bytes, or nullptr for content drawn
// later), sampled nearest and clamped: one texel per heatmap cell or screen pixel. Left bound.
unsigned nearestTexture(int width, int height, const uint8_t* rgba);

}  // namespace sharelens::plot
