#include "app/plot/list_renderer.hpp"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace sharelens::plot {
namespace {

constexpr const char* kVertexShader = R"(#version 130
uniform mat4 projection;
in vec2 position;
in vec2 uv;
in vec4 color;
out vec2 fragmentUv;
out vec4 fragmentColor;
void main() {
  fragmentUv = uv;
  fragmentColor = color;
  gl_Position = projection * vec4(position, 0.0, 1.0);
}
)";

constexpr const char* kFragmentShader = R"(#version 130
uniform sampler2D image;
in vec2 fragmentUv;
in vec4 fragmentColor;
out vec4 outColor;
void main() {
  outColor = fragmentColor * texture(image, fragmentUv);
}
)";

enum Attribute : GLuint { kPosition = 0, kUv = 1, kColor = 2 };

GLuint compiled(GLenum type, const char* source) {
  const GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok != GL_TRUE) {
    glDeleteShader(shader);
    return 0;
  }
  return shader;
}

// The GL state render() changes, put back as it was when this goes out of scope.
class SavedState {
 public:
  SavedState() {
    glGetIntegerv(GL_CURRENT_PROGRAM, &m_program);
    glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &m_vertexArray);
    glGetIntegerv(GL_ARRAY_BUFFER_BINDING, &m_arrayBuffer);
    glGetIntegerv(GL_ACTIVE_TEXTURE, &m_activeTexture);
    glActiveTexture(GL_TEXTURE0);
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &m_texture);
    glGetIntegerv(GL_VIEWPORT, m_viewport);
    glGetIntegerv(GL_SCISSOR_BOX, m_scissor);
    glGetIntegerv(GL_BLEND_SRC_RGB, &m_blendSrcRgb);
    glGetIntegerv(GL_BLEND_DST_RGB, &m_blendDstRgb);
    glGetIntegerv(GL_BLEND_SRC_ALPHA, &m_blendSrcAlpha);
    glGetIntegerv(GL_BLEND_DST_ALPHA, &m_blendDstAlpha);
    glGetIntegerv(GL_BLEND_EQUATION_RGB, &m_blendEquationRgb);
    glGetIntegerv(GL_BLEND_EQUATION_ALPHA, &m_blendEquationAlpha);
    m_blend = glIsEnabled(GL_BLEND);
    m_cull = glIsEnabled(GL_CULL_FACE);
    m_depth = glIsEnabled(GL_DEPTH_TEST);
    m_stencil = glIsEnabled(GL_STENCIL_TEST);
    m_scissorTest = glIsEnabled(GL_SCISSOR_TEST);
  }
  ~SavedState() {
    glUseProgram(static_cast<GLuint>(m_program));
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(m_texture));
    glActiveTexture(static_cast<GLenum>(m_activeTexture));
    glBindVertexArray(static_cast<GLuint>(m_vertexArray));
    glBindBuffer(GL_ARRAY_BUFFER, static_cast<GLuint>(m_arrayBuffer));
    glBlendEquationSeparate(static_cast<GLenum>(m_blendEquationRgb),
                            static_cast<GLenum>(m_blendEquationAlpha));
    glBlendFuncSeparate(static_cast<GLenum>(m_blendSrcRgb), static_cast<GLenum>(m_blendDstRgb),
                        static_cast<GLenum>(m_blendSrcAlpha), static_cast<GLenum>(m_blendDstAlpha));
    enable(GL_BLEND, m_blend), enable(GL_CULL_FACE, m_cull), enable(GL_DEPTH_TEST, m_depth);
    enable(GL_STENCIL_TEST, m_stencil), enable(GL_SCISSOR_TEST, m_scissorTest);
    glViewport(m_viewport[0], m_viewport[1], m_viewport[2], m_viewport[3]);
    glScissor(m_scissor[0], m_scissor[1], m_scissor[2], m_scissor[3]);
  }
  SavedState(const SavedState&) = delete;
  SavedState& operator=(const SavedState&) = delete;

 private:
  static void enable(GLenum capability, GLboolean on) { on ? glEnable(capability) : glDisable(capability); }

  GLint m_program = 0, m_vertexArray = 0, m_arrayBuffer = 0, m_activeTexture = 0, m_texture = 0;
  GLint m_viewport[4] = {}, m_scissor[4] = {};
  GLint m_blendSrcRgb = 0, m_blendDstRgb = 0, m_blendSrcAlpha = 0, m_blendDstAlpha = 0;
  GLint m_blendEquationRgb = 0, m_blendEquationAlpha = 0;
  GLboolean m_blend = GL_FALSE, m_cull = GL_FALSE, m_depth = GL_FALSE, m_stencil = GL_FALSE,
            m_scissorTest = GL_FALSE;
};

}  // namespace

ScissorBox scissorBox(const ImVec4& clip, ImVec2 origin, ImVec2 scale, int height) {
  const float x0 = (clip.x - origin.x) * scale.x, y0 = (clip.y - origin.y) * scale.y;
  const float x1 = (clip.z - origin.x) * scale.x, y1 = (clip.w - origin.y) * scale.y;
  if (x1 <= x0 || y1 <= y0) return {};
  return {static_cast<int>(x0), static_cast<int>(static_cast<float>(height) - y1), static_cast<int>(x1 - x0),
          static_cast<int>(y1 - y0)};
}

ScissorBox ScissorBox::within(int framebufferWidth, int framebufferHeight) const {
  const int x0 = std::max(x, 0), y0 = std::max(y, 0);
  const int x1 = std::min(x + width, framebufferWidth), y1 = std::min(y + height, framebufferHeight);
  if (x1 <= x0 || y1 <= y0) return {};
  return {x0, y0, x1 - x0, y1 - y0};
}

std::optional<OpeningFill> openingFill(const ImVector<ImDrawVert>& vertices,
                                       const ImVector<ImDrawIdx>& indices,
                                       const ImVector<ImDrawCmd>& commands, ImVec2 origin, ImVec2 scale,
                                       int width, int height, ImTextureID whiteTexture, ImVec2 whiteUv) {
  auto first = std::find_if(commands.begin(), commands.end(),
                            [](const ImDrawCmd& c) { return c.UserCallback || c.ElemCount > 0; });
  if (first == commands.end() || first->UserCallback || first->IdxOffset != 0 ||
      first->ElemCount < kOpeningFillIndices || first->GetTexID() != whiteTexture ||
      kOpeningFillIndices > size_t(indices.Size))
    return std::nullopt;
  const ScissorBox box = scissorBox(first->ClipRect, origin, scale, height).within(width, height);
  if (box.empty()) return std::nullopt;
  // ImGui's filled rectangle: corners a, (c.x, a.y), c, (a.x, c.y) as triangles (a, b, c) and (a, c, d).
  const ImDrawIdx* idx = indices.Data + first->IdxOffset;
  if (idx[3] != idx[0] || idx[4] != idx[2]) return std::nullopt;
  ImDrawVert corner[4];
  for (const auto& [k, at] : {std::pair{0, 0}, {1, 1}, {2, 2}, {3, 5}}) {
    const size_t v = first->VtxOffset + idx[at];
    if (v >= size_t(vertices.Size)) return std::nullopt;
    corner[k] = vertices[static_cast<int>(v)];
  }
  const ImVec2 a = corner[0].pos, c = corner[2].pos;
  const bool rectangle =
      corner[1].pos.x == c.x && corner[1].pos.y == a.y && corner[3].pos.x == a.x && corner[3].pos.y == c.y;
  if (!rectangle) return std::nullopt;
  for (const ImDrawVert& v : corner)
    if (v.col != corner[0].col || v.uv.x != whiteUv.x || v.uv.y != whiteUv.y) return std::nullopt;
  if ((corner[0].col >> IM_COL32_A_SHIFT & 0xFF) != 0xFF) return std::nullopt;
  // Every pixel of the box inside, centres and all (GL counts the box's rows upwards, ImGui's y runs down).
  const float left = (std::min(a.x, c.x) - origin.x) * scale.x;
  const float right = (std::max(a.x, c.x) - origin.x) * scale.x;
  const float top = (std::min(a.y, c.y) - origin.y) * scale.y;
  const float bottom = (std::max(a.y, c.y) - origin.y) * scale.y;
  const int boxTop = height - (box.y + box.height), boxBottom = height - box.y;
  if (left > static_cast<float>(box.x) || right < static_cast<float>(box.x + box.width) ||
      top > static_cast<float>(boxTop) || bottom < static_cast<float>(boxBottom))
    return std::nullopt;
  return OpeningFill{corner[0].col, box};
}

ListRenderer::~ListRenderer() {
  if (m_program) glDeleteProgram(m_program);
  if (m_vertexArray) glDeleteVertexArrays(1, &m_vertexArray);
  if (m_vertices) glDeleteBuffers(1, &m_vertices);
  if (m_indices) glDeleteBuffers(1, &m_indices);
}

bool ListRenderer::prepare() {
  if (m_program) return true;
  if (m_failed) return false;
  GLint major = 0, minor = 0;  // glDrawElementsBaseVertex: GL 3.2
  glGetIntegerv(GL_MAJOR_VERSION, &major);
  glGetIntegerv(GL_MINOR_VERSION, &minor);
  const GLuint vertex = compiled(GL_VERTEX_SHADER, kVertexShader);
  const GLuint fragment = compiled(GL_FRAGMENT_SHADER, kFragmentShader);
  if (major * 10 + minor < 32 || !vertex || !fragment) {
    if (vertex) glDeleteShader(vertex);
    if (fragment) glDeleteShader(fragment);
    m_failed = true;
    return false;
  }
  const GLuint program = glCreateProgram();
  glAttachShader(program, vertex);
  glAttachShader(program, fragment);
  glBindAttribLocation(program, kPosition, "position");
  glBindAttribLocation(program, kUv, "uv");
  glBindAttribLocation(program, kColor, "color");
  glLinkProgram(program);
  glDeleteShader(vertex);  // freed with the program
  glDeleteShader(fragment);
  GLint linked = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &linked);
  if (linked != GL_TRUE) {
    glDeleteProgram(program);
    m_failed = true;
    return false;
  }
  m_program = program;
  m_projection = glGetUniformLocation(program, "projection");
  m_texture = glGetUniformLocation(program, "image");

  GLint previousVertexArray = 0, previousArrayBuffer = 0;
  glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &previousVertexArray);
  glGetIntegerv(GL_ARRAY_BUFFER_BINDING, &previousArrayBuffer);
  glGenBuffers(1, &m_vertices);
  glGenBuffers(1, &m_indices);
  glGenVertexArrays(1, &m_vertexArray);
  glBindVertexArray(m_vertexArray);
  glBindBuffer(GL_ARRAY_BUFFER, m_vertices);
  glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, m_indices);  // part of the vertex array's state
  for (const GLuint a : {kPosition, kUv, kColor}) glEnableVertexAttribArray(a);
  constexpr auto stride = static_cast<GLsizei>(sizeof(ImDrawVert));
  glVertexAttribPointer(kPosition, 2, GL_FLOAT, GL_FALSE, stride,
                        reinterpret_cast<const void*>(offsetof(ImDrawVert, pos)));
  glVertexAttribPointer(kUv, 2, GL_FLOAT, GL_FALSE, stride,
                        reinterpret_cast<const void*>(offsetof(ImDrawVert, uv)));
  glVertexAttribPointer(kColor, 4, GL_UNSIGNED_BYTE, GL_TRUE, stride,
                        reinterpret_cast<const void*>(offsetof(ImDrawVert, col)));
  glBindVertexArray(static_cast<GLuint>(previousVertexArray));
  glBindBuffer(GL_ARRAY_BUFFER, static_cast<GLuint>(previousArrayBuffer));
  return true;
}

bool ListRenderer::render(const ImVector<ImDrawVert>& vertices, const ImVector<ImDrawIdx>& indices,
                          const ImVector<ImDrawCmd>& commands, ImVec2 origin, ImVec2 size, ImVec2 scale,
                          int width, int height, size_t from) {
  if (!prepare()) return false;
  SavedState saved;
  glViewport(0, 0, width, height);
  glEnable(GL_BLEND);
  glBlendEquation(GL_FUNC_ADD);
  glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
  glDisable(GL_CULL_FACE);
  glDisable(GL_DEPTH_TEST);
  glDisable(GL_STENCIL_TEST);
  glEnable(GL_SCISSOR_TEST);
  glUseProgram(m_program);
  glUniform1i(m_texture, 0);
  // [origin, origin + size] onto clip space, y down (ImGui's top row is the framebuffer's last).
  const float left = origin.x, right = origin.x + size.x, top = origin.y, bottom = origin.y + size.y;
  // clang-format off
  const float projection[16] = {  // column-major
      2 / (right - left),              0,                               0,  0,
      0,                               2 / (top - bottom),              0,  0,
      0,                               0,                               -1, 0,
      (right + left) / (left - right), (top + bottom) / (bottom - top), 0,  1};
  // clang-format on
  glUniformMatrix4fv(m_projection, 1, GL_FALSE, projection);
  glBindVertexArray(m_vertexArray);
  // New storage for each list: the draws of the last one keep reading the old.
  glBindBuffer(GL_ARRAY_BUFFER, m_vertices);
  glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(vertices.Size * sizeof(ImDrawVert)), vertices.Data,
               GL_STREAM_DRAW);
  glBufferData(GL_ELEMENT_ARRAY_BUFFER, static_cast<GLsizeiptr>(indices.Size * sizeof(ImDrawIdx)),
               indices.Data, GL_STREAM_DRAW);
  constexpr GLenum kIndexType = sizeof(ImDrawIdx) == 2 ? GL_UNSIGNED_SHORT : GL_UNSIGNED_INT;
  for (const ImDrawCmd& cmd : commands) {
    // This command's indices from `from` on.
    const size_t first = std::max<size_t>(cmd.IdxOffset, from);
    const size_t last = cmd.IdxOffset + cmd.ElemCount;
    if (cmd.UserCallback || first >= last) continue;
    const ScissorBox box = scissorBox(cmd.ClipRect, origin, scale, height);
    if (box.empty()) continue;
    glScissor(box.x, box.y, box.width, box.height);
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(reinterpret_cast<intptr_t>(cmd.GetTexID())));
    glDrawElementsBaseVertex(GL_TRIANGLES, static_cast<GLsizei>(last - first), kIndexType,
                             reinterpret_cast<const void*>(first * sizeof(ImDrawIdx)),
                             static_cast<GLint>(cmd.VtxOffset));
  }
  return true;
}

}  // namespace sharelens::plot
