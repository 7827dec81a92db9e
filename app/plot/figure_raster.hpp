// Figures shown from a picture while their drawing does not change (issue 14, item 9).
//
// A figure is still laid out and drawn every frame, into a list of its own instead of the window's. Once
// that list has held the same thing for a few frames (its vertices, indices and commands, compared byte for
// byte, with no texture made since), the window shows the figure's picture instead: one textured quad in
// place of its triangles. Ten runs of noisy loss are about 90,000 triangles; on a software GL (Mesa's
// llvmpipe) setting those up on the UI thread and rasterising them is most of a frame.
//
// A figure that changes (new points, a zoom being dragged, another size) is drawn in place, as with the
// cache off (its list copied into the window's); only one that stays the same is pictured, in two steps that
// keep the UI thread from waiting on the renderer:
//   frame 1  the list differs from the last frame's: drawn in place;
//   frame 2  the same again: drawn in place, and also drawn into the picture's renderbuffer (a
//            framebuffer object on the figure's pixel grid, its origin rounded down to a whole pixel so that
//            every primitive lands on the pixels it covers on screen), which the renderer rasterises by the
//            next frame;
//   frame 3  the same again: the renderbuffer is copied into the picture's texture and shown, and from then
//            on while nothing changes.
// The copy exists because llvmpipe holds up every draw that samples a texture which was itself drawn into
// (measured with --bench-ui: GL submission p50 15-19 ms sampling the render targets, 1 ms sampling copies).
//
// drawFigure first paints the figure's whole box opaque (Style::background), and ImGui fills rectangles
// without antialiasing, so every pixel of the picture is opaque inside the box and empty outside it, and
// holds what blending the same primitives over that opaque box gives in place. Shown with ImGui's usual
// blend, the screen is the same but for 8-bit rounding (llvmpipe blends into the RGBA8 renderbuffer and
// into the window's format with different rounding: a channel may differ by one), and, where a heatmap
// cell's edge falls exactly on a row of pixel centres, which of the two cells that row shows
// (tests/app/test_figure_raster.cpp).
//
// UI thread only, with the GL context current.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

namespace sharelens::plot {

// Appends a figure's drawing (an ImDrawList's buffers) to `window` as drawing the figure into `window` would,
// within the window's clip, which each command's clip is intersected with: each command's vertices, and its
// indices renumbered (past 65,536 vertices, from a new vertex offset): a memcpy and a pass over the indices
// instead of drawing the figure again.
void appendDrawing(ImDrawList& window, const ImVector<ImDrawVert>& vertices,
                   const ImVector<ImDrawIdx>& indices, const ImVector<ImDrawCmd>& commands);

class FigureRasters {
 public:
  FigureRasters() = default;
  FigureRasters(const FigureRasters&) = delete;
  FigureRasters& operator=(const FigureRasters&) = delete;
  ~FigureRasters();

  // Off (--no-figure-cache, or after a framebuffer object could not be made): begin() returns nullptr and
  // figures are drawn into the window's list.
  void setEnabled(bool on) { m_enabled = on; }
  bool enabled() const { return m_enabled; }

  // The list that figure `id` draws into this frame, clipped to [min, max) in screen coordinates; nullptr
  // when off. Each begin() is followed by finish() before the next.
  ImDrawList* begin(ImGuiID id, ImVec2 min, ImVec2 max);
  // Puts the figure begun last into `window`: as its picture, or as its drawing (copied from its list, not
  // drawn again) while it is changing or not yet pictured, or when no framebuffer object could be made (the
  // cache then turns itself off). `textureGeneration` is TextureCache::generation: a picture is not shown
  // across the making of a texture, whose name may be a freed one's.
  void finish(ImDrawList* window, uint64_t textureGeneration);
  // Frees the pictures of figures not shown since the previous call.
  void endFrame();

  struct Counts {
    uint64_t inPlace = 0;   // frames a figure was drawn in place (changing, or not yet pictured)
    uint64_t pictured = 0;  // pictures made (copied into their texture)
    uint64_t reused = 0;    // frames a figure was shown from its picture
  };
  Counts counts() const { return m_counts; }

 private:
  // What GL was handed for a picture: the same again draws the same pixels.
  struct Drawing {
    ImVector<ImDrawVert> vertices;
    ImVector<ImDrawIdx> indices;
    ImVector<ImDrawCmd> commands;
    ImVec2 origin, size, scale;
    uint64_t textureGeneration = 0;
    bool matches(const ImDrawList& list, ImVec2 origin, ImVec2 size, ImVec2 scale,
                 uint64_t textureGeneration) const;
    void swap(Drawing& other);  // the buffers change hands, nothing is copied
  };
  struct Picture {
    std::unique_ptr<ImDrawList> list;
    unsigned framebuffer = 0, renderbuffer = 0;  // drawn into
    unsigned texture = 0;                        // shown: a copy of the renderbuffer
    int width = 0, height = 0;                   // of both, in framebuffer pixels
    Drawing last;                                // what the list held the frame before
    Drawing rendered;                            // what the renderbuffer holds, not yet copied
    Drawing shown;                               // what the texture holds
    bool hasLast = false, hasRendered = false, hasShown = false;
    bool used = true;
    ImVec2 min, max;  // this frame's clip, as begin() got it
  };
  // A framebuffer object, its renderbuffer and the texture shown, of this size (kept when they have it);
  // false when GL cannot draw into them.
  static bool prepareTarget(Picture& p, int width, int height);
  // Draws `list` into the renderbuffer.
  static void render(Picture& p, ImDrawList& list, ImVec2 origin, ImVec2 size, ImVec2 scale);
  static void copyToTexture(const Picture& p);
  static void release(Picture& p);

  bool m_enabled = true;
  std::unordered_map<ImGuiID, Picture> m_pictures;
  Picture* m_current = nullptr;
  Counts m_counts;
};

}  // namespace sharelens::plot
