// Figures shown from a picture while their drawing does not change (issue 14, item 9).
//
// A figure is still laid out and drawn every frame, into a list of its own instead of the window's. Once
// that list has held the same thing for two frames (its vertices, indices and commands, compared byte for
// byte, with no texture made since), it is rendered into the figure's picture, and from then on, while it
// stays the same, the window shows the picture: one textured quad in place of its triangles. Ten runs of
// noisy loss are about 30,000 vertices; on a software GL (Mesa's llvmpipe) setting those up on the UI thread
// and rasterising them is most of a frame.
//
//   frame 1  the list differs from the last frame's: changed;
//   frame 2  the same again: after the window's frame is presented (renderPictures), the list is drawn
//            into the picture's renderbuffer (a framebuffer object on the figure's pixel grid, its origin
//            rounded down to a whole pixel so that every primitive lands on the pixels it covers on
//            screen), and a fence is set behind it;
//   frame 3+ the same again and the fence passed (the renderer has rasterised it): the renderbuffer is copied
//            into the picture's texture and shown, and from then on while nothing changes.
// Where the UI thread waits for the renderer: llvmpipe starts rasterising a scene only once the one before
// it is done, and the first draw of the next scene waits for that. A picture drawn before the window's
// submission held the window's clear (3-9 ms); one drawn between the submission and the swap waited for the
// window's frame (4-5 ms). So the picture is drawn after the swap, which has waited for the window's frame
// already; its own rasterisation then runs while the next frame is built, and the next frame's drawing
// waits for what is left of it (3-6 ms for a 30,000-index part beside training). Some frame pays about one
// part's rasterisation either way (alternated, the two orders give the same --bench-live p99 within the
// machine's noise); this way each wait is the picture's own. It goes through buffers of its own
// (ListRenderer), and is copied only once its fence has passed. The copy exists because llvmpipe holds up
// every draw that samples a texture which was itself drawn into (GL submission p50 15-19 ms sampling the
// render targets, 1 ms sampling copies).
//
// Until its new picture is ready, a changed figure is shown
// - from its previous picture, when the change came on its own (a run's new step, a job's result) and the
//   figure has a picture of the same size: a live curve costs one picture render per change and no frame
//   draws its triangles in place. At most two changes in a row are shown this way (a figure changing every
//   frame is drawn in place, as it is);
// - in place (its list copied into the window's) when the person is working it (hovering, dragging, box
//   zooming) or another figure took its place (`userDriven`: on screen in the same frame), when it is new or
//   resized, has changed three frames running or has been shown from its previous picture for
//   kMostFramesBehind frames; and once drawn in place, until its new picture is ready (the screen never
//   goes back to an older picture).
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
#include <optional>
#include <unordered_map>

#include "app/plot/list_renderer.hpp"

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
  // when off. `userDriven`: the person is working the figure, whose changes are then drawn in place at once.
  // Each begin() is followed by finish() before the next.
  ImDrawList* begin(ImGuiID id, ImVec2 min, ImVec2 max, bool userDriven);
  // Puts the figure begun last into `window`: as its picture, as its previous picture while a new one is
  // made, or as its drawing (copied from its list, not drawn again): see the top of this file. Also in place
  // when no framebuffer object could be made (the cache then turns itself off). `textureGeneration` is
  // TextureCache::generation: a drawing is not taken for the same across the making of a texture, whose name
  // may be a freed one's.
  void finish(ImDrawList* window, uint64_t textureGeneration);
  // Renders the pictures that finish() scheduled, up to kIndicesPerFrame indices a frame (a picture begun
  // is carried on next frame). Call after the window's frame was presented (the buffer swap), with the
  // window's framebuffer bound.
  void renderPictures();
  // A frame's share of picture rendering: about 10,000 triangles, 1-2 ms of vertex setup on llvmpipe, so that
  // a whole figure's 30,000 vertices (4-11 ms on the 2-core machine beside training) never land in one frame.
  // Measured with --bench-live: 15,000 and 20,000 gave a higher p99 (every part's rasterisation is waited for
  // by the next frame's drawing, whatever its size), 45,000 about the same.
  static constexpr size_t kIndicesPerFrame = 30000;
  // Frees the pictures of figures not shown since the previous call.
  void endFrame();

  struct Counts {
    uint64_t inPlace = 0;   // frames a figure was drawn in place (changing, or not yet pictured)
    uint64_t pictured = 0;  // pictures made (copied into their texture)
    uint64_t reused = 0;    // frames a figure was shown from its picture of what it draws
    uint64_t previous = 0;  // frames a changed figure was shown from its previous picture
    uint64_t cleared = 0;   // pictures rendered over their background as the clear colour (openingFill)
  };
  Counts counts() const { return m_counts; }
  // Whether a figure of this frame was shown from its previous picture (a screenshot waits for the new).
  bool showingPrevious() const { return m_previousThisFrame > 0; }

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
    Drawing rendered;                            // what the renderbuffer holds (or will), not yet copied
    Drawing shown;                               // what the texture holds
    bool hasLast = false, hasRendered = false, hasShown = false;
    bool renderDue = false;    // `rendered` is being drawn into the renderbuffer by renderPictures()
    size_t renderedUpTo = 0;   // indices of `rendered` drawn so far
    uint64_t renderedId = 0;   // names `rendered`'s buffers to ListRenderer (from m_drawings)
    int framesBehind = 0;      // frames in a row shown from the previous picture
    bool inPlaceLast = false;  // the last frame drew the list in place: the screen is past the picture
    void* fence = nullptr;     // a GLsync behind that drawing
    int changesInARow = 0;     // frames in a row the list differed from the frame before's
    bool used = true;
    bool userDriven = false;  // as begin() got it
    ImVec2 min, max;          // this frame's clip, as begin() got it
  };
  // A framebuffer object, its renderbuffer and the texture shown, of this size (kept when they have it);
  // false when GL cannot draw into them.
  static bool prepareTarget(Picture& p, int width, int height);
  // Draws up to `budget` more indices of `rendered` into the renderbuffer (cleared first), setting the
  // fence after the last; the indices drawn, or nullopt when GL cannot (the cache then turns itself off).
  std::optional<size_t> render(Picture& p, size_t budget);
  static bool rasterised(Picture& p);  // the fence behind the renderbuffer's drawing has passed
  static void copyToTexture(Picture& p);
  static void release(Picture& p);

  bool m_enabled = true;
  ListRenderer m_renderer;  // its own buffers: the window's upload never waits for a picture's draws
  std::unordered_map<ImGuiID, Picture> m_pictures;
  Picture* m_current = nullptr;
  Counts m_counts;
  size_t m_previousThisFrame = 0;
  uint64_t m_drawings = 0;  // drawings scheduled for rendering, ever
  // A previous picture is shown at most this many frames in a row (a figure changing every other frame
  // never holds still long enough for its picture; it is then drawn in place).
  static constexpr int kMostFramesBehind = 16;
};

}  // namespace sharelens::plot
