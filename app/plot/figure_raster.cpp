#include "app/plot/figure_raster.hpp"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "app/plot/imgui_canvas.hpp"  // nearestTexture

namespace sharelens::plot {
namespace {

// Binds a framebuffer for its scope, and the one bound before again after it.
class FramebufferBinding {
 public:
  explicit FramebufferBinding(GLuint framebuffer) {
    glGetIntegerv(GL_FRAMEBUFFER_BINDING, &m_previous);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  }
  ~FramebufferBinding() { glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(m_previous)); }
  FramebufferBinding(const FramebufferBinding&) = delete;
  FramebufferBinding& operator=(const FramebufferBinding&) = delete;

 private:
  GLint m_previous = 0;
};

}  // namespace

void appendDrawing(ImDrawList& window, const ImVector<ImDrawVert>& vertices,
                   const ImVector<ImDrawIdx>& indices, const ImVector<ImDrawCmd>& commands) {
  for (const ImDrawCmd& cmd : commands) {
    if (!cmd.UserCallback && cmd.ElemCount == 0) continue;
    window.PushClipRect({cmd.ClipRect.x, cmd.ClipRect.y}, {cmd.ClipRect.z, cmd.ClipRect.w}, true);
    if (cmd.UserCallback) {  // it runs with the command's clip, within the window's
      window.AddCallback(cmd.UserCallback, cmd.UserCallbackData);
      window.PopClipRect();
      continue;
    }
    const ImDrawIdx* idx = indices.Data + cmd.IdxOffset;
    const auto [lowest, highest] = std::minmax_element(idx, idx + cmd.ElemCount);
    const int first = *lowest, count = *highest - *lowest + 1;  // the vertices this command uses
    window.PushTextureID(cmd.TextureId);
    // Past 65,536 vertices this starts a command at a new vertex offset, which `base` then counts from.
    window.PrimReserve(static_cast<int>(cmd.ElemCount), count);
    const auto base = static_cast<ImDrawIdx>(window._VtxCurrentIdx - static_cast<unsigned>(first));
    std::memcpy(window._VtxWritePtr, vertices.Data + cmd.VtxOffset + first, sizeof(ImDrawVert) * count);
    window._VtxWritePtr += count;
    for (unsigned k = 0; k < cmd.ElemCount; ++k)
      window._IdxWritePtr[k] = static_cast<ImDrawIdx>(base + idx[k]);
    window._IdxWritePtr += cmd.ElemCount;
    window._VtxCurrentIdx += static_cast<unsigned>(count);
    window.PopTextureID();
    window.PopClipRect();
  }
}

FigureRasters::~FigureRasters() {
  stopWorker();  // done with every renderbuffer before they go
  for (auto& [id, p] : m_pictures) release(p);
}

void FigureRasters::startWorker(SharedGlContext context) {
  stopWorker();  // lets go of its context first: it may be the same one
  m_worker = std::make_unique<PictureWorker>(std::move(context));
}

bool FigureRasters::withWorker(const Picture& p) {
  return p.job && !p.jobDue && p.job->state.load(std::memory_order_acquire) == PictureJob::State::Out;
}

void FigureRasters::stopWorker() {
  if (!m_worker) return;
  m_worker.reset();
  for (auto& [id, p] : m_pictures)  // handed over and never done: made anew (a job still due is kept)
    if (withWorker(p)) p.job.reset();
}

void FigureRasters::waitForPictures() {
  if (m_worker) m_worker->waitUntilIdle();
}

void FigureRasters::release(Picture& p) {
  if (withWorker(p)) p.job->orphanedRenderbuffer = std::exchange(p.renderbuffer, 0u);  // picture_worker.hpp
  if (p.job) p.job->abandoned = true;
  if (p.framebuffer) glDeleteFramebuffers(1, &p.framebuffer);
  if (p.renderbuffer) glDeleteRenderbuffers(1, &p.renderbuffer);
  if (p.texture) glDeleteTextures(1, &p.texture);
  p.framebuffer = p.renderbuffer = p.texture = 0;
  p.width = p.height = 0;
  p.job.reset();
  p.hasShown = p.jobDue = false;
}

ImDrawList* FigureRasters::begin(ImGuiID id, ImVec2 min, ImVec2 max, bool userDriven) {
  if (!enabled()) return nullptr;
  Picture& p = m_pictures[id];
  if (!p.list) p.list = std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData());
  p.used = true;
  p.userDriven = userDriven;
  p.min = min;
  p.max = max;
  ImDrawList& list = *p.list;
  list._ResetForNewFrame();  // as ImGui prepares a window's list each frame
  list.PushTextureID(ImGui::GetFont()->ContainerAtlas->TexID);
  list.PushClipRect(min, max, false);
  m_current = &p;
  return &list;
}

bool FigureRasters::prepareTarget(Picture& p, int width, int height) {
  if (p.framebuffer && p.width == width && p.height == height) return true;
  release(p);
  glGenRenderbuffers(1, &p.renderbuffer);
  glBindRenderbuffer(GL_RENDERBUFFER, p.renderbuffer);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  glGenFramebuffers(1, &p.framebuffer);
  bool complete = false;
  {
    FramebufferBinding bound(p.framebuffer);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, p.renderbuffer);
    complete = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  }
  if (!complete) {
    release(p);
    return false;
  }
  p.texture = nearestTexture(width, height, nullptr);
  p.width = width;
  p.height = height;
  return true;
}

void FigureRasters::copyToTexture(Picture& p) {
  FramebufferBinding bound(p.framebuffer);
  // Attached again: what another context drew into a shared object is seen once it is bound anew here.
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, p.renderbuffer);
  glBindTexture(GL_TEXTURE_2D, p.texture);
  glCopyTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, 0, 0, p.width, p.height);
}

void FigureRasters::finish(ImDrawList* window, uint64_t textureGeneration) {
  Picture& p = *m_current;
  m_current = nullptr;
  ImDrawList& list = *p.list;
  list.PopClipRect();
  list.PopTextureID();
  list._PopUnusedDrawCmd();
  auto inPlace = [&] {  // the list's drawing copied into the window's
    ++m_counts.inPlace;
    p.inPlaceLast = true;
    appendDrawing(*window, list.VtxBuffer, list.IdxBuffer, list.CmdBuffer);
  };
  // The picture's pixel grid is the screen's: its corner is the clip's, rounded out to whole pixels. With a
  // fractional framebuffer scale no rectangle in ImGui's units is whole pixels on both sides (ImGui's GL
  // backend sizes the viewport by truncation), so such figures are drawn in place, as are lists with a
  // callback (which ListRenderer does not run).
  const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
  const bool hasCallback = std::any_of(list.CmdBuffer.begin(), list.CmdBuffer.end(),
                                       [](const ImDrawCmd& c) { return c.UserCallback != nullptr; });
  if (scale.x != std::floor(scale.x) || scale.y != std::floor(scale.y) || scale.x < 1 || scale.y < 1 ||
      hasCallback) {
    inPlace();
    return;
  }
  const ImVec2 origin{std::floor(p.min.x), std::floor(p.min.y)};
  const ImVec2 size{std::ceil(p.max.x) - origin.x, std::ceil(p.max.y) - origin.y};
  const int width = static_cast<int>(size.x * scale.x);  // exact: whole numbers
  const int height = static_cast<int>(size.y * scale.y);
  if (width <= 0 || height <= 0) return;  // nothing on screen
  auto holds = [&](const FigureDrawing& d) {
    return d.matches(list, origin, size, scale, textureGeneration);
  };
  // Keeps the list's drawing in `d` by trading buffers with the list (cleared next frame, it reuses the
  // old drawing's storage): nothing is copied.
  auto keep = [&](FigureDrawing& d) {
    d.vertices.swap(list.VtxBuffer);
    d.indices.swap(list.IdxBuffer);
    d.commands.swap(list.CmdBuffer);
    d.origin = origin, d.size = size, d.scale = scale, d.textureGeneration = textureGeneration;
  };
  // GL's first row is the bottom one: the picture is shown with v running up.
  auto showPicture = [&] {
    p.inPlaceLast = false;
    window->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(p.texture)), origin,
                     {origin.x + size.x, origin.y + size.y}, {0, 1}, {1, 0});
  };
  const bool sized = p.framebuffer && p.width == width && p.height == height;
  const bool changed = !(p.hasLast && holds(p.last));
  p.changesInARow = changed ? p.changesInARow + 1 : 0;
  // While the picture of what it draws now is made: its previous picture, or its drawing in place (also
  // once the screen has shown something newer than that picture: it never goes back).
  auto meanwhile = [&] {
    if (sized && p.hasShown && !p.userDriven && !p.inPlaceLast && p.changesInARow <= 2 &&
        p.framesBehind < kMostFramesBehind) {
      ++p.framesBehind;
      ++m_counts.previous;
      ++m_previousThisFrame;
      showPicture();
    } else {
      inPlace();
    }
  };
  if (sized && p.hasShown && holds(p.shown)) {
    p.changesInARow = p.framesBehind = 0;
    ++m_counts.reused;
    showPicture();
  } else if (sized && p.job && holds(p.job->drawing)) {
    const PictureJob::State state = p.job->state.load(std::memory_order_acquire);
    if (state == PictureJob::State::Out) {  // on its way
      meanwhile();
      return;
    }
    if (state == PictureJob::State::Failed) {  // GL cannot draw pictures here: in place from now on
      m_enabled = false;
      inPlace();
      return;
    }
    copyToTexture(p);
    if (p.job->fill) ++m_counts.cleared;
    p.framesBehind = 0;
    p.shown.swap(p.job->drawing);
    p.hasShown = true;
    p.job.reset();
    ++m_counts.pictured;
    showPicture();
  } else if (!changed) {  // the same twice: rendered into the renderbuffer by the worker
    meanwhile();
    if (p.job) {  // the drawing before this one
      const PictureJob::State state = p.job->state.load(std::memory_order_acquire);
      if (state == PictureJob::State::Out) return;  // this one is handed over once it is done
      if (state == PictureJob::State::Failed) {
        m_enabled = false;
        return;
      }
      p.job.reset();  // its picture is never shown
    }
    if (!prepareTarget(p, width, height)) {
      m_enabled = false;
      return;
    }
    auto job = std::make_shared<PictureJob>();
    keep(job->drawing);  // `last` holds the same, to compare the next frame's with
    job->renderbuffer = p.renderbuffer;
    job->width = width, job->height = height;
    const ImFontAtlas* atlas = ImGui::GetFont()->ContainerAtlas;
    job->fill = openingFill(job->drawing.vertices, job->drawing.indices, job->drawing.commands, origin, scale,
                            width, height, atlas->TexID, atlas->TexUvWhitePixel);
    p.job = std::move(job);
    p.jobDue = true;
  } else {
    meanwhile();
    keep(p.last);
    p.hasLast = true;
  }
}

void FigureRasters::renderPictures() {
  if (!m_worker) return;
  m_worker->collect();
  std::vector<std::shared_ptr<PictureJob>> due;
  for (auto& [id, p] : m_pictures)
    if (p.jobDue) {
      p.jobDue = false;
      // Behind everything this context did before: the renderbuffer's storage, the textures the drawing
      // samples, and the copy out of the renderbuffer's last picture.
      p.job->ready = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
      if (!p.job->ready) {  // GL cannot fence: pictures cannot be handed over safely
        m_enabled = false;
        p.job.reset();
        continue;
      }
      due.push_back(p.job);
    }
  if (due.empty()) return;
  glFlush();  // the fences reach the renderer before the worker waits for them
  for (std::shared_ptr<PictureJob>& job : due) m_worker->submit(std::move(job));
}

void FigureRasters::endFrame() {
  m_previousThisFrame = 0;
  for (auto it = m_pictures.begin(); it != m_pictures.end();) {
    if (!it->second.used) {
      release(it->second);
      it = m_pictures.erase(it);
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

}  // namespace sharelens::plot
