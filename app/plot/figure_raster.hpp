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
//   frame 2  the same again: after the window's frame is presented (renderPictures), the list is handed to
//            the picture worker (picture_worker.hpp), which draws it into the picture's renderbuffer (on
//            the figure's pixel grid, its origin rounded down to a whole pixel so that every primitive lands
//            on the pixels it covers on screen) in a GL context of its own, on a thread of its own;
//   frame 3+ the same again and the worker done: the renderbuffer is copied into the picture's texture and
//            shown, and from then on while nothing changes.
// The UI thread never waits for a picture's rasterisation: llvmpipe rasterises a context's scenes one after
// the other and the first draw of the next scene waits for the one before, so a picture drawn in the
// window's context held up the next frame's drawing by what was left of its rasterisation (3-6 ms per
// 30,000 indices beside training). The copy exists because the shown texture must not change while the
// worker draws the next picture, and because llvmpipe holds up every draw that samples a texture which was
// itself drawn into (GL submission p50 15-19 ms sampling the render targets, 1 ms sampling copies).
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
// UI thread only, with the window's GL context current (the worker has its own).
#pragma once

#include <imgui.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "app/plot/picture_worker.hpp"

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

  // Pictures are rendered by a worker thread in `context` (Platform::pictureContext()); until one is given,
  // or when it is off (--no-figure-cache, or after GL could not draw a picture), begin() returns nullptr
  // and figures are drawn into the window's list.
  void startWorker(SharedGlContext context);
  void stopWorker();  // joins it (TextureCache, before freeing the textures the worker may still sample)
  void setEnabled(bool on) { m_enabled = on; }
  bool enabled() const { return m_enabled && m_worker; }

  // The list that figure `id` draws into this frame, clipped to [min, max) in screen coordinates; nullptr
  // when off. `userDriven`: the person is working the figure, whose changes are then drawn in place at once.
  // Each begin() is followed by finish() before the next.
  ImDrawList* begin(ImGuiID id, ImVec2 min, ImVec2 max, bool userDriven);
  // Puts the figure begun last into `window`: as its picture, as its previous picture while a new one is
  // made, or as its drawing (copied from its list, not drawn again): see the top of this file. Also in place
  // when no framebuffer object could be made or the worker could not draw a picture (the cache then turns
  // itself off). `textureGeneration` is
  // TextureCache::generation: a drawing is not taken for the same across the making of a texture, whose name
  // may be a freed one's.
  void finish(ImDrawList* window, uint64_t textureGeneration);
  // Hands the pictures that finish() scheduled to the worker, each behind a fence on what the window's
  // context did before, and frees the jobs the worker is done with. Called after the window's frame was
  // presented (the buffer swap): the worker's rendering then overlaps the next frame rather than competing
  // with this one's submission.
  void renderPictures();
  // Blocks until the worker has rendered every picture handed to it (tests).
  void waitForPictures();
  // Frees the pictures of figures not shown since the previous call.
  void endFrame();

  struct Counts {
    uint64_t inPlace = 0;   // frames a figure was drawn in place (changing, or not yet pictured)
    uint64_t pictured = 0;  // pictures made (copied into their texture)
    uint64_t reused = 0;    // frames a figure was shown from its picture of what it draws
    uint64_t previous = 0;  // frames a changed figure was shown from its previous picture
    uint64_t cleared = 0;   // pictures made with their background cleared in, not drawn (openingFill)
  };
  Counts counts() const { return m_counts; }
  // Whether a figure of this frame was shown from its previous picture (a screenshot waits for the new).
  bool showingPrevious() const { return m_previousThisFrame > 0; }

 private:
  struct Picture {
    std::unique_ptr<ImDrawList> list;
    unsigned framebuffer = 0, renderbuffer = 0;  // the worker draws into the renderbuffer; this reads it
    unsigned texture = 0;                        // shown: a copy of the renderbuffer
    int width = 0, height = 0;                   // of both, in framebuffer pixels
    FigureDrawing last;                          // what the list held the frame before
    FigureDrawing shown;                         // what the texture holds
    bool hasLast = false, hasShown = false;
    std::shared_ptr<PictureJob> job;  // the renderbuffer's drawing, scheduled, out or done, not yet copied
    bool jobDue = false;              // scheduled: handed to the worker by renderPictures()
    int framesBehind = 0;             // frames in a row shown from the previous picture
    bool inPlaceLast = false;         // the last frame drew the list in place: the screen is past the picture
    int changesInARow = 0;            // frames in a row the list differed from the frame before's
    bool used = true;
    bool userDriven = false;  // as begin() got it
    ImVec2 min, max;          // this frame's clip, as begin() got it
  };
  // A framebuffer object, its renderbuffer and the texture shown, of this size (kept when they have it);
  // false when GL cannot draw into them.
  static bool prepareTarget(Picture& p, int width, int height);
  static void copyToTexture(Picture& p);
  // Its job was handed to the worker, which may still draw into its renderbuffer.
  static bool withWorker(const Picture& p);
  static void release(Picture& p);

  bool m_enabled = true;
  std::unique_ptr<PictureWorker> m_worker;  // none: figures are drawn in place
  std::unordered_map<ImGuiID, Picture> m_pictures;
  Picture* m_current = nullptr;
  Counts m_counts;
  size_t m_previousThisFrame = 0;
  // A previous picture is shown at most this many frames in a row (a figure changing every other frame
  // never holds still long enough for its picture; it is then drawn in place).
  static constexpr int kMostFramesBehind = 16;
};

}  // namespace sharelens::plot
