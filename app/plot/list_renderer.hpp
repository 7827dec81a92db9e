// Draws one ImDrawList into the bound framebuffer with GL objects of its own: a figure's picture
// (figure_raster.hpp) is rendered through this, on the picture worker's thread and context
// (picture_worker.hpp), not through ImGui's GL backend, whose draw data, state and vertex array belong to
// the UI thread and the window's context.
//
// Each list is uploaded into new storage (glBufferData): a software GL (Mesa's llvmpipe) makes an upload
// into storage that queued draws still read wait until they are rasterised.
//
// The pixels are the backend's: the same orthographic projection of [origin, origin + size] onto the
// framebuffer, the same per-vertex colour times texture, the same blending (source alpha over, alpha
// accumulated as 1 - (1 - a)(1 - b)) and each command's clip as a scissor box truncated to whole pixels
// (tests/app/test_figure_raster.cpp compares pictures with the same figure drawn in place).
//
// One thread, with its GL context current; GL objects are made on first use and freed by the destructor.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace sharelens::plot {

// A command's clip as GL's scissor box in a framebuffer of `height` rows showing [origin, origin + size]
// at `scale`: truncated to whole pixels as ImGui's backend does, rows counted upwards as GL counts them.
// Empty (width or height 0) when the clip is.
struct ScissorBox {
  int x = 0, y = 0, width = 0, height = 0;
  bool empty() const { return width <= 0 || height <= 0; }
  ScissorBox within(int framebufferWidth, int framebufferHeight) const;  // the part inside the framebuffer
};
ScissorBox scissorBox(const ImVec4& clip, ImVec2 origin, ImVec2 scale, int height);

// The rectangle a list opens with, when it is opaque, untextured (its corners sample `whiteUv` of
// `whiteTexture`, ImGui's white pixel) and covers every pixel its command's scissor box lets it draw in the
// width x height framebuffer: a figure's background. Drawn over a clear framebuffer, it leaves exactly those
// pixels its colour with alpha 1 and the rest clear, so clearing them to that colour and drawing from index
// 6 on gives the same pixels. A clear only writes memory where a quad goes through llvmpipe's rasteriser and
// blending: a figure's background was the heaviest part of its picture. nullopt when the list opens with
// anything else, also with a rectangle whose edge falls inside one of the box's pixels (which pixels it
// covers there is the rasteriser's edge rule's to decide; at or beyond the box's edges no centre is near).
struct OpeningFill {
  ImU32 color = 0;
  ScissorBox pixels;  // within the framebuffer
};
std::optional<OpeningFill> openingFill(const ImVector<ImDrawVert>& vertices,
                                       const ImVector<ImDrawIdx>& indices,
                                       const ImVector<ImDrawCmd>& commands, ImVec2 origin, ImVec2 scale,
                                       int width, int height, ImTextureID whiteTexture, ImVec2 whiteUv);
constexpr size_t kOpeningFillIndices = 6;  // ImGui draws a filled rectangle as two triangles

class ListRenderer {
 public:
  ListRenderer() = default;
  ListRenderer(const ListRenderer&) = delete;
  ListRenderer& operator=(const ListRenderer&) = delete;
  ~ListRenderer();

  // Draws a list's buffers as ImGui's backend would draw the list with DisplayPos `origin`, DisplaySize
  // `size` and FramebufferScale `scale`, into the bound framebuffer of width x height pixels (size * scale),
  // from index `from` on (commands hold consecutive indices; FigureRasters starts past an opening fill).
  // Commands with a callback are skipped (FigureRasters pictures no list that has one). Restores the GL
  // state it changes. False when the shader program cannot be made (GL older than 3.2, a shader refused).
  bool render(const ImVector<ImDrawVert>& vertices, const ImVector<ImDrawIdx>& indices,
              const ImVector<ImDrawCmd>& commands, ImVec2 origin, ImVec2 size, ImVec2 scale, int width,
              int height, size_t from);

 private:
  bool prepare();  // compiles and links the program, makes the buffers; once

  unsigned m_program = 0, m_vertexArray = 0, m_vertices = 0, m_indices = 0;
  int m_projection = -1, m_texture = -1;  // uniform locations
  bool m_failed = false;                  // the program could not be made: never tried again
};

}  // namespace sharelens::plot
