#include "app/plot/picture_worker.hpp"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>

#include <cstring>
#include <utility>

namespace sharelens::plot {
namespace {

template <class T>
bool sameBytes(const ImVector<T>& a, const ImVector<T>& b) {
  return a.Size == b.Size && (a.Size == 0 || std::memcmp(a.Data, b.Data, sizeof(T) * a.Size) == 0);
}

bool same(ImVec2 a, ImVec2 b) {
  return a.x == b.x && a.y == b.y;
}

}  // namespace

// ImDrawCmd's constructor zeroes it, padding included, so whole commands compare as bytes.
bool FigureDrawing::matches(const ImDrawList& list, ImVec2 atOrigin, ImVec2 ofSize, ImVec2 atScale,
                            uint64_t generation) const {
  return same(origin, atOrigin) && same(size, ofSize) && same(scale, atScale) &&
         textureGeneration == generation && sameBytes(list.VtxBuffer, vertices) &&
         sameBytes(list.IdxBuffer, indices) && sameBytes(list.CmdBuffer, commands);
}

void FigureDrawing::swap(FigureDrawing& other) {
  vertices.swap(other.vertices);
  indices.swap(other.indices);
  commands.swap(other.commands);
  std::swap(origin, other.origin), std::swap(size, other.size), std::swap(scale, other.scale);
  std::swap(textureGeneration, other.textureGeneration);
}

SyncAnswer waitForFence(const std::function<SyncAnswer(std::chrono::nanoseconds)>& clientWait,
                        const std::function<bool()>& giveUp, std::chrono::nanoseconds limit,
                        std::chrono::nanoseconds slice) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const SyncAnswer answer = clientWait(slice);
    if (answer != SyncAnswer::TimedOut) return answer;
    if (giveUp() || std::chrono::steady_clock::now() >= deadline) return SyncAnswer::TimedOut;
  }
}

void PictureWorker::freeOrphaned(PictureJob& job) {
  if (job.orphanedRenderbuffer) glDeleteRenderbuffers(1, &job.orphanedRenderbuffer);
  job.orphanedRenderbuffer = 0;
}

PictureWorker::PictureWorker(SharedGlContext context)
    : m_context(std::move(context)), m_thread([this] { run(); }) {}

PictureWorker::~PictureWorker() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  m_thread.join();
  for (const std::shared_ptr<PictureJob>& job : m_queue) {  // never begun: this thread frees what they hold
    if (job->ready) glDeleteSync(static_cast<GLsync>(job->ready));
    job->ready = nullptr;
    freeOrphaned(*job);
  }
  for (const std::shared_ptr<PictureJob>& job : m_finished) freeOrphaned(*job);
}

void PictureWorker::submit(std::shared_ptr<PictureJob> job) {
  {
    std::lock_guard lock(m_mutex);
    m_queue.push_back(std::move(job));
  }
  m_wake.notify_one();
}

void PictureWorker::collect() {
  std::vector<std::shared_ptr<PictureJob>> finished;
  {
    std::lock_guard lock(m_mutex);
    finished.swap(m_finished);
  }
  for (const std::shared_ptr<PictureJob>& job : finished) freeOrphaned(*job);
}  // the jobs are freed here, on the caller's thread

void PictureWorker::waitUntilIdle() {
  std::unique_lock lock(m_mutex);
  m_idle.wait(lock, [&] { return m_queue.empty() && !m_busy; });
}

void PictureWorker::run() {
  m_context.makeCurrent();
  {
    ListRenderer renderer;  // its GL objects are this context's: made and freed here
    std::unique_lock lock(m_mutex);
    for (;;) {
      m_wake.wait(lock, [&] { return m_stop || !m_queue.empty(); });
      if (m_stop) break;
      std::shared_ptr<PictureJob> job = std::move(m_queue.front());
      m_queue.pop_front();
      m_busy = true;
      lock.unlock();
      SyncAnswer waited = SyncAnswer::Failed;
      if (job->ready) {  // the UI thread flushed it before handing the job over
        const auto ready = static_cast<GLsync>(job->ready);
        waited = waitForFence(
            [&](std::chrono::nanoseconds slice) {
              const GLenum answer = glClientWaitSync(ready, 0, static_cast<GLuint64>(slice.count()));
              return answer == GL_TIMEOUT_EXPIRED ? SyncAnswer::TimedOut
                     : answer == GL_WAIT_FAILED   ? SyncAnswer::Failed
                                                  : SyncAnswer::Signalled;
            },
            [&] {
              std::lock_guard stopping(m_mutex);
              return m_stop || job->abandoned.load(std::memory_order_relaxed);
            },
            kFenceLimit);
        glDeleteSync(ready);
        job->ready = nullptr;
      }
      if (waited != SyncAnswer::Signalled)  // what the UI thread did before cannot be known to be complete
        job->state.store(PictureJob::State::Failed, std::memory_order_release);
      else if (!job->abandoned.load(std::memory_order_relaxed))
        render(*job, renderer);
      lock.lock();
      m_finished.push_back(std::move(job));
      m_busy = false;
      if (m_queue.empty()) m_idle.notify_all();
    }
    m_idle.notify_all();
  }
  m_context.release();
}

void PictureWorker::render(PictureJob& job, ListRenderer& renderer) {
  GLuint framebuffer = 0;
  glGenFramebuffers(1, &framebuffer);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, job.renderbuffer);
  bool drawn = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  if (drawn) {
    const FigureDrawing& d = job.drawing;
    glDisable(GL_SCISSOR_TEST);
    glClearColor(0, 0, 0, 0);
    glClear(GL_COLOR_BUFFER_BIT);
    size_t from = 0;
    if (job.fill) {  // see openingFill: the figure's background, cleared into its pixels instead of drawn
      const ImVec4 color = ImGui::ColorConvertU32ToFloat4(job.fill->color);
      glEnable(GL_SCISSOR_TEST);
      glScissor(job.fill->pixels.x, job.fill->pixels.y, job.fill->pixels.width, job.fill->pixels.height);
      glClearColor(color.x, color.y, color.z, color.w);
      glClear(GL_COLOR_BUFFER_BIT);
      glDisable(GL_SCISSOR_TEST);
      from = kOpeningFillIndices;
    }
    drawn = renderer.render(d.vertices, d.indices, d.commands, d.origin, d.size, d.scale, job.width,
                            job.height, from);
    glFinish();  // the renderbuffer holds the pixels before the UI thread is told
  }
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &framebuffer);
  job.state.store(drawn ? PictureJob::State::Done : PictureJob::State::Failed, std::memory_order_release);
}

}  // namespace sharelens::plot
