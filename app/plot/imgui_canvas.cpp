#include "app/plot/imgui_canvas.hpp"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>        // glGenerateMipmap
#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace sharelens::plot {
namespace {

ImVec2 im(Point p) {
  return {p.x, p.y};
}

}  // namespace

unsigned nearestTexture(int width, int height, const uint8_t* rgba) {
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  return texture;
}

namespace {

unsigned heatmapTexture(int width, int height, const uint8_t* rgba) {
  const unsigned texture = nearestTexture(width, height, rgba);
  // Minified, each pixel shows its cells' mean colour (the mip levels average 2 x 2 texels, blended
  // trilinearly between levels) rather than whichever one cell nearest sampling picks.
  glGenerateMipmap(GL_TEXTURE_2D);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_LINEAR);
  return texture;
}

}  // namespace

ImU32 toImColor(Rgb c, float alpha) {
  return IM_COL32(c.r, c.g, c.b, static_cast<int>(alpha * 255));
}

TextureCache::~TextureCache() {
  m_rasters.stopWorker();
  for (auto& [key, e] : m_textures) glDeleteTextures(1, &e.texture);
  for (auto& [c, t] : m_colorbars) glDeleteTextures(1, &t);
  if (m_disc) glDeleteTextures(1, &m_disc);
}

TextureCache::Key TextureCache::keyOf(const Heatmap& h) {
  // A categorical map colours by category: keyed apart from the same values under a colormap.
  const int coloring =
      h.categories.empty() ? static_cast<int>(h.colormap) : -1 - static_cast<int>(h.categories.size());
  return {h.fingerprint(), coloring, h.vmin, h.vmax, h.rows, h.cols};
}

ImTextureID TextureCache::heatmap(const Heatmap& h) {
  const Key key = keyOf(h);
  auto it = m_textures.find(key);
  if (it == m_textures.end()) {
    std::vector<uint8_t> rgba(static_cast<size_t>(h.rows * h.cols * 4));
    for (int64_t i = 0; i < h.rows * h.cols; ++i) {
      const Rgb c = heatmapCellColor(h, h.values[static_cast<size_t>(i)]);
      rgba[static_cast<size_t>(4 * i)] = c.r, rgba[static_cast<size_t>(4 * i + 1)] = c.g,
                                   rgba[static_cast<size_t>(4 * i + 2)] = c.b;
      rgba[static_cast<size_t>(4 * i + 3)] = 255;
    }
    ++m_generation;
    it = m_textures
             .emplace(
                 key,
                 Entry{heatmapTexture(static_cast<int>(h.cols), static_cast<int>(h.rows), rgba.data()), true})
             .first;
  }
  it->second.used = true;
  return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(it->second.texture));
}

ImTextureID TextureCache::disc() {
  if (m_disc) return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(m_disc));
  ++m_generation;
  glGenTextures(1, &m_disc);
  glBindTexture(GL_TEXTURE_2D, m_disc);
  // Every mip level drawn from the disc itself (8 x 8 samples a texel) rather than from the level above, so
  // that each is the disc's true coverage at that size.
  // The disc fills kDiscFill of the side: the transparent margin keeps its filtered edge inside the quad.
  constexpr int kLargest = 64, kSamples = 8;
  for (int level = 0, side = kLargest; side >= 1; ++level, side /= 2) {
    std::vector<uint8_t> rgba(static_cast<size_t>(side * side * 4), 255);
    const float radius = static_cast<float>(side) / 2 * kDiscFill;
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x) {
        int inside = 0;
        for (int sy = 0; sy < kSamples; ++sy)
          for (int sx = 0; sx < kSamples; ++sx) {
            const float dx = static_cast<float>(x) + (static_cast<float>(sx) + 0.5f) / kSamples - radius;
            const float dy = static_cast<float>(y) + (static_cast<float>(sy) + 0.5f) / kSamples - radius;
            inside += dx * dx + dy * dy <= radius * radius;
          }
        rgba[static_cast<size_t>(4 * (y * side + x) + 3)] =
            static_cast<uint8_t>(255 * inside / (kSamples * kSamples));
      }
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, level, GL_RGBA, side, side, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  }
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(m_disc));
}

ImTextureID TextureCache::colorbar(Colormap c) {
  auto it = m_colorbars.find(static_cast<int>(c));
  if (it == m_colorbars.end()) {
    std::vector<uint8_t> rgba(256 * 4);
    for (int i = 0; i < 256; ++i) {  // row 0 (top) = high
      const Rgb col = colormapTable(c)[static_cast<size_t>(255 - i)];
      rgba[static_cast<size_t>(4 * i)] = col.r, rgba[static_cast<size_t>(4 * i + 1)] = col.g,
                                   rgba[static_cast<size_t>(4 * i + 2)] = col.b;
      rgba[static_cast<size_t>(4 * i + 3)] = 255;
    }
    ++m_generation;
    it = m_colorbars.emplace(static_cast<int>(c), nearestTexture(1, 256, rgba.data())).first;
  }
  return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(it->second));
}

void TextureCache::endFrame() {
  m_rasters.endFrame();
  for (auto it = m_textures.begin(); it != m_textures.end();) {
    if (!it->second.used) {
      glDeleteTextures(1, &it->second.texture);
      it = m_textures.erase(it);
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

void ImGuiCanvas::line(Point a, Point b, Rgb color, float width, bool dashed) {
  if (!dashed) {
    m_list->AddLine(im(a), im(b), toImColor(color), width);
    return;
  }
  const float dx = b.x - a.x, dy = b.y - a.y, length = std::sqrt(dx * dx + dy * dy);
  for (float t = 0; t < length; t += 8.0f) {
    const float e = std::min(length, t + 4.0f);
    m_list->AddLine({a.x + dx * t / length, a.y + dy * t / length},
                    {a.x + dx * e / length, a.y + dy * e / length}, toImColor(color), width);
  }
}

void ImGuiCanvas::polyline(std::span<const Point> points, Rgb color, float width, bool dashed) {
  if (dashed) {
    for (size_t i = 1; i < points.size(); ++i) line(points[i - 1], points[i], color, width, true);
    return;
  }
  std::vector<ImVec2> v;
  v.reserve(points.size());
  for (const Point& p : points) v.push_back(im(p));
  // A whole-pixel width lets ImGui antialias from its baked line texture: 2 vertices a point instead of 4,
  // which is what a software GL (llvmpipe) spends its time on with ten 20,000-point curves on screen.
  m_list->AddPolyline(v.data(), static_cast<int>(v.size()), toImColor(color), 0,
                      std::max(1.0f, std::round(width)));
}

void ImGuiCanvas::rect(Point min, Point max, Rgb color, float width) {
  m_list->AddRect(im(min), im(max), toImColor(color), 0, 0, width);
}
void ImGuiCanvas::fillRect(Point min, Point max, Rgb color, float alpha) {
  m_list->AddRectFilled(im(min), im(max), toImColor(color, alpha));
}
void ImGuiCanvas::fillQuad(Point a, Point b, Point c, Point d, Rgb color, float alpha) {
  m_list->AddQuadFilled(im(a), im(b), im(c), im(d), toImColor(color, alpha));
}
void ImGuiCanvas::circle(Point center, float radius, Rgb color) {
  // One textured quad (TextureCache::disc) instead of an antialiased 10-gon's 20 vertices and 28 triangles:
  // with a validation curve's markers on ten runs, the polygons were a third of the frame on llvmpipe.
  const float half = radius / TextureCache::kDiscFill;  // the quad holds the disc and its margin
  m_list->AddImage(m_textures.disc(), {center.x - half, center.y - half}, {center.x + half, center.y + half},
                   {0, 0}, {1, 1}, toImColor(color));
}

void ImGuiCanvas::columnBand(std::span<const ColumnSpan> columns, Rgb color, float width) {
  // A triangle strip over the outline's columns, two vertices each: the band's top and bottom. No
  // antialiasing fringe: a band is drawn only for spread data (Trace::band), whose edge is the noise of
  // each column, and a fringe would triple the triangles, which are what a software GL pays for.
  const std::vector<ColumnSpan> outline = bandOutline(columns, width);
  if (outline.size() < 2) return;
  const ImU32 solid = toImColor(color);
  const ImVec2 uv = ImGui::GetDrawListSharedData()->TexUvWhitePixel;
  constexpr size_t kChunk = 16384;  // columns per batch: 16-bit indices address at most 65,536 vertices
  for (size_t first = 0; first + 1 < outline.size(); first += kChunk - 1) {
    const size_t count = std::min(kChunk, outline.size() - first);
    m_list->PrimReserve(static_cast<int>(6 * (count - 1)), static_cast<int>(2 * count));
    const auto base = static_cast<ImDrawIdx>(m_list->_VtxCurrentIdx);
    for (size_t i = 0; i < count; ++i) {
      const ColumnSpan& c = outline[first + i];
      m_list->PrimWriteVtx({c.x, c.top}, uv, solid);
      m_list->PrimWriteVtx({c.x, c.bottom}, uv, solid);
    }
    for (size_t i = 0; i + 1 < count; ++i) {
      const auto top = static_cast<ImDrawIdx>(base + 2 * i), bottom = static_cast<ImDrawIdx>(top + 1);
      const auto nextTop = static_cast<ImDrawIdx>(top + 2), nextBottom = static_cast<ImDrawIdx>(top + 3);
      for (const ImDrawIdx k : {top, bottom, nextBottom, top, nextBottom, nextTop}) m_list->PrimWriteIdx(k);
    }
  }
}

Point ImGuiCanvas::textSize(std::string_view text, float size) {
  const ImVec2 s = ImGui::GetFont()->CalcTextSizeA(size, FLT_MAX, 0, text.data(), text.data() + text.size());
  return {s.x, s.y};
}

void ImGuiCanvas::text(Point at, std::string_view text, Rgb color, float size, Align h, Align v,
                       bool vertical) {
  const Point s = textSize(text, size);
  const float w = vertical ? s.y : s.x, ht = vertical ? s.x : s.y;
  float x = at.x - (h == Align::Center ? w / 2 : h == Align::End ? w : 0);
  float y = at.y - (v == Align::Center ? ht / 2 : v == Align::End ? ht : 0);
  if (!vertical) {
    m_list->AddText(ImGui::GetFont(), size, {x, y}, toImColor(color), text.data(), text.data() + text.size());
    return;
  }
  // Rotated 90 degrees counter-clockwise: each glyph's quad is emitted directly (AddText cannot rotate, and
  // drawing elsewhere then moving the vertices would escape the clip rect). Reads bottom to top.
  const ImFont* font = ImGui::GetFont();
  const float scale = size / font->FontSize;
  const ImU32 col = toImColor(color);
  float advance = 0;  // along the text, from its start at the bottom of the box
  const float baseX = x, bottom = y + s.x;
  for (const char *p = text.data(), *end = text.data() + text.size(); p < end;) {
    unsigned int c = 0;
    const int bytes = ImTextCharFromUtf8(&c, p, end);
    p += bytes > 0 ? bytes : 1;
    const ImFontGlyph* g = font->FindGlyph(static_cast<ImWchar>(c));
    if (!g) continue;
    if (g->Visible) {
      // Glyph box in text space (u along the text, v down from the line top), mapped to screen as
      // (x, y) = (baseX + v, bottom - u).
      const float u0 = advance + g->X0 * scale, u1 = advance + g->X1 * scale;
      const float v0 = g->Y0 * scale, v1 = g->Y1 * scale;
      m_list->PrimReserve(6, 4);
      m_list->PrimQuadUV({baseX + v0, bottom - u0}, {baseX + v0, bottom - u1}, {baseX + v1, bottom - u1},
                         {baseX + v1, bottom - u0}, {g->U0, g->V0}, {g->U1, g->V0}, {g->U1, g->V1},
                         {g->U0, g->V1}, col);
    }
    advance += g->AdvanceX * scale;
  }
}

void ImGuiCanvas::heatmapCells(Point min, Point max, const Heatmap& heatmap) {
  m_list->AddImage(m_textures.heatmap(heatmap), im(min), im(max));
}

void ImGuiCanvas::colorbar(Point min, Point max, Colormap colormap) {
  m_list->AddImage(m_textures.colorbar(colormap), im(min), im(max));
}

void ImGuiCanvas::pushClip(Point min, Point max) {
  m_list->PushClipRect(im(min), im(max), true);
}
void ImGuiCanvas::popClip() {
  m_list->PopClipRect();
}

}  // namespace sharelens::plot
