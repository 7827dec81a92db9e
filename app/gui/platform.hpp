// The window: GLFW + OpenGL 3 + Dear ImGui (Debian's 1.86, backends inside libimgui.a). Owns the GL
// context, so it lives on the UI thread only. Idle throttling: waitEvents() sleeps until input, a timeout,
// or a worker's wake() (glfwPostEmptyEvent).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct GLFWwindow;

namespace sharelens::gui {

struct PlatformOptions {
  std::string title = "ShareLens";
  int width = 1600;
  int height = 1000;
  bool visible = true;
  std::string iniPath;  // ImGui layout persistence; empty disables it
};

struct RgbaImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 4, top row first
};

class Platform {
 public:
  explicit Platform(const PlatformOptions& options);  // throws sharelens::Error when no display is available
  ~Platform();
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  bool shouldClose() const;
  void requestClose();
  void waitEvents(double timeoutSeconds);
  void pollEvents();
  static void wake();  // thread-safe: makes waitEvents return

  void beginFrame();
  void render();   // renders ImGui into the back buffer (and captures it when asked)
  void present();  // swaps buffers
  void endFrame() { render(), present(); }
  void setVsync(bool on);
  float contentScale() const { return m_scale; }
  GLFWwindow* window() const { return m_window; }
  RgbaImage captureFramebuffer() const;              // the back buffer after render, before swap
  void captureNextFrame() { m_captureNext = true; }  // endFrame() reads the next frame back before the swap
  const RgbaImage& lastCapture() const { return m_lastFrame; }

  // Files dropped onto the window are delivered here, on the UI thread, from pollEvents/waitEvents.
  void onDrop(std::function<void(std::vector<std::string>)> handler);

 private:
  void loadFonts();
  GLFWwindow* m_window = nullptr;
  float m_scale = 1.0f;
  std::string m_iniPath;
  std::function<void(std::vector<std::string>)> m_dropHandler;
  RgbaImage m_lastFrame;
  bool m_captureNext = false;
};

}  // namespace sharelens::gui
