#include "app/plot/figure_raster.hpp"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>
#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "app/plot/imgui_canvas.hpp"  // nearestTexture

namespace sharelens::plot {
namespace {

template <class T>
bool sameBytes(const ImVector<T>& a, const ImVector<T>& b) {
  return a.Size == b.Size && (a.Size == 0 || std::memcmp(a.Data, b.Data, sizeof(T) * a.Size) == 0);
}

bool same(ImVec2 a, ImVec2 b) {
  return a.x == b.x && a.y == b.y;
}

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

// ImDrawCmd's constructor zeroes it, padding included, so whole commands compare as bytes.
bool FigureRasters::Drawing::matches(const ImDrawList& list, ImVec2 atOrigin, ImVec2 ofSize, ImVec2 atScale,
                                     uint64_t generation) const {
  return same(origin, atOrigin) && same(size, ofSize) && same(scale, atScale) &&
         textureGeneration == generation && sameBytes(list.VtxBuffer, vertices) &&
         sameBytes(list.IdxBuffer, indices) && sameBytes(list.CmdBuffer, commands);
}

void FigureRasters::Drawing::swap(Drawing& other) {
  vertices.swap(other.vertices);
  indices.swap(other.indices);
  commands.swap(other.commands);
  std::swap(origin, other.origin), std::swap(size, other.size), std::swap(scale, other.scale);
  std::swap(textureGeneration, other.textureGeneration);
}

FigureRasters::~FigureRasters() {
  for (auto& [id, p] : m_pictures) release(p);
}

void FigureRasters::release(Picture& p) {
  if (p.framebuffer) glDeleteFramebuffers(1, &p.framebuffer);
  if (p.renderbuffer) glDeleteRenderbuffers(1, &p.renderbuffer);
  if (p.texture) glDeleteTextures(1, &p.texture);
  p.framebuffer = p.renderbuffer = p.texture = 0;
  p.width = p.height = 0;
  p.hasRendered = p.hasShown = false;
}

ImDrawList* FigureRasters::begin(ImGuiID id, ImVec2 min, ImVec2 max) {
  if (!m_enabled) return nullptr;
  Picture& p = m_pictures[id];
  if (!p.list) p.list = std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData());
  p.used = true;
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

void FigureRasters::render(Picture& p, ImDrawList& list, ImVec2 origin, ImVec2 size, ImVec2 scale) {
  FramebufferBinding bound(p.framebuffer);
  glDisable(GL_SCISSOR_TEST);
  glClearColor(0, 0, 0, 0);
  glClear(GL_COLOR_BUFFER_BIT);
  ImDrawList* lists[] = {&list};
  ImDrawData data;
  data.Valid = true;
  data.CmdLists = lists;
  data.CmdListsCount = 1;
  data.TotalVtxCount = list.VtxBuffer.Size;
  data.TotalIdxCount = list.IdxBuffer.Size;
  data.DisplayPos = origin;
  data.DisplaySize = size;
  data.FramebufferScale = scale;
  ImGui_ImplOpenGL3_RenderDrawData(&data);  // restores the GL state it changes, the viewport included
}

void FigureRasters::copyToTexture(const Picture& p) {
  FramebufferBinding bound(p.framebuffer);
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
    appendDrawing(*window, list.VtxBuffer, list.IdxBuffer, list.CmdBuffer);
  };
  // The picture's pixel grid is the screen's: its corner is the clip's, rounded out to whole pixels. With a
  // fractional framebuffer scale no rectangle in ImGui's units is whole pixels on both sides (ImGui's GL
  // backend sizes the viewport by truncation), so such figures are drawn in place.
  const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
  if (scale.x != std::floor(scale.x) || scale.y != std::floor(scale.y) || scale.x < 1 || scale.y < 1) {
    inPlace();
    return;
  }
  const ImVec2 origin{std::floor(p.min.x), std::floor(p.min.y)};
  const ImVec2 size{std::ceil(p.max.x) - origin.x, std::ceil(p.max.y) - origin.y};
  const int width = static_cast<int>(size.x * scale.x);  // exact: whole numbers
  const int height = static_cast<int>(size.y * scale.y);
  if (width <= 0 || height <= 0) return;  // nothing on screen
  auto holds = [&](const Drawing& d) { return d.matches(list, origin, size, scale, textureGeneration); };
  // Keeps the list's drawing in `d` by trading buffers with the list (cleared next frame, it reuses the
  // old drawing's storage): nothing is copied.
  auto keep = [&](Drawing& d) {
    d.vertices.swap(list.VtxBuffer);
    d.indices.swap(list.IdxBuffer);
    d.commands.swap(list.CmdBuffer);
    d.origin = origin, d.size = size, d.scale = scale, d.textureGeneration = textureGeneration;
  };
  const bool sized = p.framebuffer && p.width == width && p.height == height;
  if (sized && p.hasShown && holds(p.shown)) {
    ++m_counts.reused;
  } else if (sized && p.hasRendered && holds(p.rendered)) {  // frame 3: rasterised by now
    copyToTexture(p);
    p.shown.swap(p.rendered);
    p.hasShown = true;
    p.hasRendered = false;
    ++m_counts.pictured;
  } else {
    p.hasRendered = false;
    if (p.hasLast && holds(p.last)) {  // frame 2: the same twice, into the renderbuffer
      inPlace();
      if (!prepareTarget(p, width, height)) {
        m_enabled = false;
        return;
      }
      render(p, list, origin, size, scale);
      keep(p.rendered);
      p.hasRendered = true;
    } else {  // frame 1: changed
      inPlace();
      keep(p.last);
      p.hasLast = true;
    }
    return;
  }
  // GL's first row is the bottom one: the picture is shown with v running up.
  window->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(p.texture)), origin,
                   {origin.x + size.x, origin.y + size.y}, {0, 1}, {1, 0});
}

void FigureRasters::endFrame() {
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
