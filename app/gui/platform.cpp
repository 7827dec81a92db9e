#include "app/gui/platform.hpp"

#define GL_SILENCE_DEPRECATION
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <atomic>
#include <cmath>
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

std::atomic<uint64_t> g_wakes{0};  // wake() calls, from any thread
void countEvent(GLFWwindow* w) {
  if (auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w))) self->countInputEvent();
}
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
  installInputLatches();
  ImGui_ImplGlfw_InitForOpenGL(m_window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  glfwSetDropCallback(m_window, [](GLFWwindow* w, int count, const char** paths) {
    countEvent(w);
    auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w));
    if (self && self->m_dropHandler) self->m_dropHandler(std::vector<std::string>(paths, paths + count));
  });
}

Platform::~Platform() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  if (m_pictureWindow) glfwDestroyWindow(m_pictureWindow);
  if (m_window) glfwDestroyWindow(m_window);
  glfwTerminate();
}

std::optional<plot::SharedGlContext> Platform::pictureContext() {
  if (!m_pictureWindow) {
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);  // the other hints are still the window's
    m_pictureWindow = glfwCreateWindow(1, 1, "ShareLens pictures", nullptr, m_window);
    if (!m_pictureWindow) return std::nullopt;
  }
  GLFWwindow* context = m_pictureWindow;
  return plot::SharedGlContext{.makeCurrent = [context] { glfwMakeContextCurrent(context); },
                               .release = [] { glfwMakeContextCurrent(nullptr); }};
}

void Platform::installInputLatches() {
  glfwSetKeyCallback(m_window, [](GLFWwindow* w, int key, int /*scancode*/, int action, int mods) {
    countEvent(w);
    auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w));
    if (self && action == GLFW_PRESS) self->m_pendingPresses.push_back({key, mods});
  });
  glfwSetMouseButtonCallback(m_window, [](GLFWwindow* w, int button, int action, int /*mods*/) {
    countEvent(w);
    auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w));
    if (self && action == GLFW_PRESS) self->notePress(button);
  });
  glfwGetCursorPos(m_window, &m_cursorX, &m_cursorY);
  glfwSetCursorPosCallback(m_window, [](GLFWwindow* w, double x, double y) {  // ImGui 1.86 installs none
    countEvent(w);
    if (auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w)))
      self->m_cursorX = x, self->m_cursorY = y;
  });
  // The rest only counted (waitEvents): ImGui's backend keeps the first four and calls them before its own.
  glfwSetScrollCallback(m_window, [](GLFWwindow* w, double, double) { countEvent(w); });
  glfwSetCharCallback(m_window, [](GLFWwindow* w, unsigned int) { countEvent(w); });
  glfwSetWindowFocusCallback(m_window, [](GLFWwindow* w, int) { countEvent(w); });
  glfwSetCursorEnterCallback(m_window, [](GLFWwindow* w, int) { countEvent(w); });
  glfwSetFramebufferSizeCallback(m_window, [](GLFWwindow* w, int, int) { countEvent(w); });
  glfwSetWindowRefreshCallback(m_window, countEvent);
}

// ImGui 1.86 reads the keys' state at each frame, not their events: a key pressed and released between two
// frames (a quick tap while a frame was slow, or while the window waited for events) was never down for it,
// so Ctrl+A, Escape or Enter in a text box did nothing. Such a key is shown down for one frame, with the
// modifiers it was pressed with, and let go at the next frame (the backend's own state restored).
void Platform::holdQuickTaps() {
  ImGuiIO& io = ImGui::GetIO();
  const auto down = [&](int a, int b) { return io.KeysDown[a] || io.KeysDown[b]; };
  if (!m_deferredCharacters.empty()) {  // typed after a shortcut tap: now, before what came since
    ImVector<ImWchar> since = io.InputQueueCharacters;
    io.InputQueueCharacters.resize(0);
    for (ImWchar c : m_deferredCharacters) io.InputQueueCharacters.push_back(c);
    for (ImWchar c : since) io.InputQueueCharacters.push_back(c);
    m_deferredCharacters.clear();
  }
  if (!m_heldForAFrame.empty()) {
    // Back to what the keyboard says now: a key pressed again and held since is down, not let go.
    for (int key : m_heldForAFrame) io.KeysDown[key] = glfwGetKey(m_window, key) == GLFW_PRESS;
    m_heldForAFrame.clear();
    io.KeyCtrl = down(GLFW_KEY_LEFT_CONTROL, GLFW_KEY_RIGHT_CONTROL);
    io.KeyShift = down(GLFW_KEY_LEFT_SHIFT, GLFW_KEY_RIGHT_SHIFT);
    io.KeyAlt = down(GLFW_KEY_LEFT_ALT, GLFW_KEY_RIGHT_ALT);
    io.KeySuper = down(GLFW_KEY_LEFT_SUPER, GLFW_KEY_RIGHT_SUPER);
  }
  for (const KeyPress& p : m_framePresses) {
    if (p.key < 0 || p.key >= static_cast<int>(IM_ARRAYSIZE(io.KeysDown)) || io.KeysDown[p.key]) continue;
    io.KeysDown[p.key] = true;
    m_heldForAFrame.push_back(p.key);
    io.KeyCtrl |= (p.mods & GLFW_MOD_CONTROL) != 0;
    io.KeyShift |= (p.mods & GLFW_MOD_SHIFT) != 0;
    io.KeyAlt |= (p.mods & GLFW_MOD_ALT) != 0;
    io.KeySuper |= (p.mods & GLFW_MOD_SUPER) != 0;
  }
  // A text box ignores typed characters while Ctrl (without Alt) is down: the text typed right after a
  // Ctrl+A tap in the same frame would be lost. It waits for the next frame, when the tap is let go.
  const bool ctrlHeld = glfwGetKey(m_window, GLFW_KEY_LEFT_CONTROL) == GLFW_PRESS ||
                        glfwGetKey(m_window, GLFW_KEY_RIGHT_CONTROL) == GLFW_PRESS;
  if (io.KeyCtrl && !io.KeyAlt && !ctrlHeld && !m_heldForAFrame.empty() && io.InputQueueCharacters.Size > 0) {
    for (ImWchar c : io.InputQueueCharacters) m_deferredCharacters.push_back(c);
    io.InputQueueCharacters.resize(0);
  }
}

// ImGui's rule (imgui.cpp, UpdateMouseInputs): a press within MouseDoubleClickTime of the previous press of
// the button and within MouseDoubleClickMaxDist of it is a double-click. Only pairs are looked for here (the
// press after a pair starts anew); ImGui goes on counting 3, 4, ... from the count beginFrame() leaves.
void Platform::notePress(int button) {
  if (button < 0 || button >= kButtons) return;
  const ImGuiIO& io = ImGui::GetIO();
  const double x = m_cursorX, y = m_cursorY, now = glfwGetTime();
  Press& last = m_lastPress[button];
  if (now - last.time <= io.MouseDoubleClickTime &&
      std::hypot(x - last.x, y - last.y) <= io.MouseDoubleClickMaxDist) {
    m_pendingDoubleClick[button] = true;
    last = Press{};
  } else {
    last = {now, x, y};
  }
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
void Platform::cancelClose() {
  glfwSetWindowShouldClose(m_window, GLFW_FALSE);
}
bool Platform::waitEvents(double timeoutSeconds) {
  const uint64_t before = m_inputEvents + g_wakes.load(std::memory_order_relaxed);
  glfwWaitEventsTimeout(timeoutSeconds);  // the callbacks above run inside it, on this thread
  return m_inputEvents + g_wakes.load(std::memory_order_relaxed) != before;
}
void Platform::pollEvents() {
  glfwPollEvents();
}
void Platform::wake() {
  g_wakes.fetch_add(1, std::memory_order_relaxed);
  glfwPostEmptyEvent();
}
void Platform::onDrop(std::function<void(std::vector<std::string>)> handler) {
  m_dropHandler = std::move(handler);
}

bool Platform::keyPressed(int key, int mods) const {
  constexpr int kChordMods =
      GLFW_MOD_SHIFT | GLFW_MOD_CONTROL | GLFW_MOD_ALT | GLFW_MOD_SUPER;  // not the locks
  return std::any_of(m_framePresses.begin(), m_framePresses.end(),
                     [&](const KeyPress& p) { return p.key == key && (p.mods & kChordMods) == mods; });
}

void Platform::beginFrame() {
  m_framePresses.swap(m_pendingPresses);
  m_pendingPresses.clear();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  holdQuickTaps();
  ImGui::NewFrame();
  // A double-click ImGui missed: 1.86's IsMouseDoubleClicked reads the click count; the bool is for old code.
  ImGuiIO& io = ImGui::GetIO();
  for (int b = 0; b < kButtons; ++b) {
    if (m_pendingDoubleClick[b]) {
      io.MouseClickedCount[b] = std::max<ImU16>(io.MouseClickedCount[b], 2);
      // ImGui counts the next click from this, and ignores the release that follows a double-click by it.
      io.MouseClickedLastCount[b] = io.MouseClickedCount[b];
      io.MouseDoubleClicked[b] = true;
    }
    m_pendingDoubleClick[b] = false;
  }
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
