// Renders figures' pictures (figure_raster.hpp) on a thread of its own, in a GL context that shares the
// window's objects (textures, renderbuffers), so that the UI thread never waits for a picture to be
// rasterised.
//
// Why a thread: a software GL (Mesa's llvmpipe) queues each context's drawing as scenes and starts a scene
// only once the one before it is rasterised; the first draw of the next scene waits for that. A picture
// drawn in the window's own context therefore held up the next frame's drawing by what was left of its
// rasterisation (3-6 ms for a 30,000-index part beside training, --bench-ui --bench-live), however it was
// cut up and whenever it was drawn. In a context of its own, the picture's scenes are its thread's to wait
// for; the window's frames queue behind nothing but themselves.
//
// A job names a renderbuffer the UI thread made, and a fence the UI thread set after its last GL command
// before handing the job over (the renderbuffer's storage, the textures the drawing samples and the copy
// out of the renderbuffer's last picture are then complete for the worker's context too). The worker waits
// for that fence, draws the job's drawing into the renderbuffer through a framebuffer object of its own
// (framebuffer objects are not shared), waits for its own context to finish (glFinish) and marks the job
// done. The UI thread then reads the renderbuffer (FigureRasters copies it into the picture's texture).
// Jobs run in the order given.
//
// A figure gone from the screen frees its picture at the end of the frame, maybe while its job is out. The
// job is then `abandoned` (skipped if not begun, its result never read), and its renderbuffer is left to the
// job (`orphanedRenderbuffer`) and deleted only once the worker is done with it, so its name cannot go to a
// new picture while the worker may still draw into it. The heatmap textures such a job samples are the
// texture cache's, which frees those no figure showed this frame: a job drawing at that moment may sample a
// freed texture, and its result is never read.
//
// The worker never drops the last reference to a job: a job's drawing holds ImGui's buffers, which are
// freed through ImGui's allocator on the UI thread's context (it counts them, unsynchronised). Jobs the
// worker is done with wait in a list the UI thread empties (renderPictures).
#pragma once

#include <imgui.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "app/plot/list_renderer.hpp"

namespace sharelens::plot {

// What GL is handed for a figure's picture (an ImDrawList's buffers, drawn as the window's would be with
// DisplayPos `origin`, DisplaySize `size` and FramebufferScale `scale`): the same again draws the same
// pixels.
struct FigureDrawing {
  ImVector<ImDrawVert> vertices;
  ImVector<ImDrawIdx> indices;
  ImVector<ImDrawCmd> commands;
  ImVec2 origin, size, scale;
  uint64_t textureGeneration = 0;  // TextureCache::generation when it was drawn
  bool matches(const ImDrawList& list, ImVec2 origin, ImVec2 size, ImVec2 scale,
               uint64_t textureGeneration) const;
  void swap(FigureDrawing& other);  // the buffers change hands, nothing is copied
};

// A GL context for a thread of its own, sharing the window's objects: makeCurrent() on that thread before
// any GL call, release() on it after the last. Platform::pictureContext() makes one. A context that cannot
// be made current shows as jobs that fail (no framebuffer object can be made).
struct SharedGlContext {
  std::function<void()> makeCurrent;
  std::function<void()> release;
};

struct PictureJob {
  enum class State { Out, Done, Failed };
  // Set before submit(), read-only while the job is out.
  FigureDrawing drawing;
  unsigned renderbuffer = 0;  // RGBA8, width x height: drawn into
  int width = 0, height = 0;
  std::optional<OpeningFill> fill;  // cleared into its pixels; the drawing from its indices on is drawn
  void* ready = nullptr;  // a GLsync the UI thread set behind its last command; the worker waits, frees it
  // UI thread only: the renderbuffer of a picture freed while the worker could still draw into it, deleted
  // once the worker is done with the job (collect(), or the destructor for a job never begun).
  unsigned orphanedRenderbuffer = 0;
  // Done (the renderbuffer holds the drawing's pixels) or Failed (GL could not draw: no program, an
  // incomplete framebuffer); the UI thread reads the job only after seeing it so (acquire).
  std::atomic<State> state{State::Out};
  std::atomic<bool> abandoned{false};  // its picture is gone: skipped if not begun
};

// What glClientWaitSync answered for one slice of waiting.
enum class SyncAnswer { Signalled, TimedOut, Failed };
// Waits for a fence, asking `clientWait(slice)` (glClientWaitSync with that timeout) again while it times
// out, until it is signalled or fails, `giveUp()` says the wait no longer matters (the worker stopping, the
// job abandoned), or `limit` has passed: a fence that never signals (a lost context, a driver fault) costs
// that one picture -- it is drawn in place instead -- never the worker, nor the join in its destructor.
// Answers Signalled only for a signalled fence.
SyncAnswer waitForFence(const std::function<SyncAnswer(std::chrono::nanoseconds)>& clientWait,
                        const std::function<bool()>& giveUp, std::chrono::nanoseconds limit,
                        std::chrono::nanoseconds slice = std::chrono::milliseconds(100));

class PictureWorker {
 public:
  explicit PictureWorker(SharedGlContext context);  // starts the thread
  // Finishes the job in hand, drops the ones waiting, frees its GL objects and releases the context.
  ~PictureWorker();
  PictureWorker(const PictureWorker&) = delete;
  PictureWorker& operator=(const PictureWorker&) = delete;

  void submit(std::shared_ptr<PictureJob> job);
  // Drops the jobs the worker is done with, and deletes their orphaned renderbuffers (on the UI thread,
  // its context current: see the top of the file).
  void collect();
  // Blocks until every job submitted so far is done (tests).
  void waitUntilIdle();

 private:
  void run();
  static void render(PictureJob& job, ListRenderer& renderer);  // on the worker's thread, its context current
  static void freeOrphaned(PictureJob& job);                    // on the UI thread, its context current

  SharedGlContext m_context;
  std::mutex m_mutex;
  std::condition_variable m_wake;  // a job came, or stop
  std::condition_variable m_idle;  // the queue ran empty
  std::deque<std::shared_ptr<PictureJob>> m_queue;
  std::vector<std::shared_ptr<PictureJob>> m_finished;  // done or skipped: dropped by collect()
  bool m_busy = false;                                  // a job is in hand
  bool m_stop = false;
  std::thread m_thread;
  static constexpr std::chrono::seconds kFenceLimit{5};  // see waitForFence
};

}  // namespace sharelens::plot
