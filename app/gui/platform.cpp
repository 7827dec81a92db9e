#include "app/gui/platform.hpp"

#define GL_SILENCE_DEPRECATION
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace sharelens::gui {
namespace {

std::string g_glfwError;

void onGlfwError(int code, const char* description) {
  g_glfwError = std::to_string(code) + ": " + description;
}

const char* kFontCandidates[] = {
    "assets/fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
};

}  // namespace

Platform::Platform(const PlatformOptions& options) : m_iniPath(options.iniPath) {
  glfwSetErrorCallback(onGlfwError);
  if (!glfwInit())
    throw Error(
        {.what = "cannot open a window",
         .where = "GLFW",
         .found = g_glfwError.empty() ? "glfwInit failed" : g_glfwError,
         .hint =
             "run inside a desktop session, or under Xvfb: xvfb-run -s '-screen 0 1920x1080x24' sharelens"});
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glfwWindowHint(GLFW_VISIBLE, options.visible ? GLFW_TRUE : GLFW_FALSE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  m_window = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (!m_window) {
    glfwTerminate();
    throw Error({.what = "cannot create an OpenGL 3.0 window",
                 .where = "GLFW",
                 .found = g_glfwError,
                 .hint = "check the OpenGL driver (glxinfo | grep version); Mesa's llvmpipe works"});
  }
  glfwSetWindowUserPointer(m_window, this);
  glfwMakeContextCurrent(m_window);
  glfwSwapInterval(1);
  float xs = 1.0f, ys = 1.0f;
  glfwGetWindowContentScale(m_window, &xs, &ys);
  m_scale = std::clamp(std::max(xs, ys), 1.0f, 3.0f);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = m_iniPath.empty() ? nullptr : m_iniPath.c_str();
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  ImGui::StyleColorsDark();
  ImGui::GetStyle().ScaleAllSizes(m_scale);
  loadFonts();
  ImGui_ImplGlfw_InitForOpenGL(m_window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  glfwSetDropCallback(m_window, [](GLFWwindow* w, int count, const char** paths) {
    auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w));
    if (self && self->m_dropHandler) self->m_dropHandler(std::vector<std::string>(paths, paths + count));
  });
}

Platform::~Platform() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  if (m_window) glfwDestroyWindow(m_window);
  glfwTerminate();
}

void Platform::loadFonts() {
  ImGuiIO& io = ImGui::GetIO();
  const float size = 15.0f * m_scale;
  for (const char* candidate : kFontCandidates) {
    if (std::filesystem::exists(candidate)) {
      ImFontConfig config;
      config.OversampleH = 2;
      config.OversampleV = 2;
      if (io.Fonts->AddFontFromFileTTF(candidate, size, &config)) return;
    }
  }
  ImFontConfig config;
  config.SizePixels = 13.0f * m_scale;
  io.Fonts->AddFontDefault(&config);
}

bool Platform::shouldClose() const {
  return glfwWindowShouldClose(m_window);
}
void Platform::requestClose() {
  glfwSetWindowShouldClose(m_window, GLFW_TRUE);
}
void Platform::waitEvents(double timeoutSeconds) {
  glfwWaitEventsTimeout(timeoutSeconds);
}
void Platform::pollEvents() {
  glfwPollEvents();
}
void Platform::wake() {
  glfwPostEmptyEvent();
}
void Platform::onDrop(std::function<void(std::vector<std::string>)> handler) {
  m_dropHandler = std::move(handler);
}

void Platform::beginFrame() {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
}

void Platform::setVsync(bool on) {
  glfwSwapInterval(on ? 1 : 0);
}

void Platform::render() {
  ImGui::Render();
  int width = 0, height = 0;
  glfwGetFramebufferSize(m_window, &width, &height);
  glViewport(0, 0, width, height);
  glClearColor(0.09f, 0.09f, 0.10f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (m_captureNext) {
    m_captureNext = false;
    m_lastFrame = captureFramebuffer();
  }
}

void Platform::present() {
  glfwSwapBuffers(m_window);
}

RgbaImage Platform::captureFramebuffer() const {
  RgbaImage image;
  glfwGetFramebufferSize(m_window, &image.width, &image.height);
  image.pixels.resize(static_cast<size_t>(image.width) * image.height * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, image.width, image.height, GL_RGBA, GL_UNSIGNED_BYTE, image.pixels.data());
  // GL's first row is the bottom one.
  const size_t stride = static_cast<size_t>(image.width) * 4;
  std::vector<uint8_t> row(stride);
  for (int y = 0; y < image.height / 2; ++y) {
    uint8_t* a = image.pixels.data() + y * stride;
    uint8_t* b = image.pixels.data() + (image.height - 1 - y) * stride;
    std::memcpy(row.data(), a, stride);
    std::memcpy(a, b, stride);
    std::memcpy(b, row.data(), stride);
  }
  return image;
}

}  // namespace sharelens::gui
