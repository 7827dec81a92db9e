// The window: GLFW + OpenGL 3 + Dear ImGui (Debian's 1.86, backends inside libimgui.a). Owns the GL
// context, so it lives on the UI thread only. Idle throttling: waitEvents() sleeps until input, a timeout,
// or a worker's wake() (glfwPostEmptyEvent), and says which.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/plot/picture_worker.hpp"

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
  void cancelClose();  // the window stays open after all (a close the user is asked to confirm)
  // True when input or a wake() came during the wait (counted by the window's callbacks, not guessed from
  // the time it took: a process stopped and continued, as the GUI tests' `frozen` does, still counts).
  bool waitEvents(double timeoutSeconds);
  void countInputEvent() { ++m_inputEvents; }  // the window's GLFW callbacks, on the UI thread
  void pollEvents();
  static void wake();  // thread-safe: makes waitEvents return

  void beginFrame();
  void render();   // renders ImGui into the back buffer (and captures it when asked)
  void present();  // swaps buffers
  void endFrame() { render(), present(); }
  void setVsync(bool on);
  float contentScale() const { return m_scale; }
  GLFWwindow* window() const { return m_window; }
  // A context sharing the window's GL objects, for the thread that renders figures' pictures
  // (plot::PictureWorker): a hidden 1 x 1 window's, made on the first call. nullopt when GLFW cannot make
  // one; figures are then drawn in place.
  std::optional<plot::SharedGlContext> pictureContext();
  RgbaImage captureFramebuffer() const;              // the back buffer after render, before swap
  void captureNextFrame() { m_captureNext = true; }  // endFrame() reads the next frame back before the swap
  const RgbaImage& lastCapture() const { return m_lastFrame; }

  // Files dropped onto the window are delivered here, on the UI thread, from pollEvents/waitEvents.
  void onDrop(std::function<void(std::vector<std::string>)> handler);

  // Whether `key` (GLFW_KEY_*) went down with exactly the modifiers `mods` (GLFW_MOD_*) in the events this
  // frame consumed. ImGui 1.86 sees only whether a key is down when the frame starts, so a quick tap, pressed
  // and released within one slow frame, never reaches ImGui::IsKeyPressed: shortcuts read this instead.
  bool keyPressed(int key, int mods) const;

 private:
  void loadFonts();
  void installInputLatches();
  void holdQuickTaps();  // before ImGui's backend, which keeps these callbacks and calls them first
  void notePress(int button);
  uint64_t m_inputEvents = 0;  // input and window events so far (waitEvents)
  GLFWwindow* m_window = nullptr;
  GLFWwindow* m_pictureWindow = nullptr;  // its context is the picture worker's (pictureContext)
  float m_scale = 1.0f;
  std::string m_iniPath;
  std::function<void(std::vector<std::string>)> m_dropHandler;
  struct KeyPress {
    int key, mods;
  };
  std::vector<KeyPress> m_pendingPresses;     // since the last beginFrame(), from GLFW's key callback
  std::vector<KeyPress> m_framePresses;       // the ones this frame consumed
  std::vector<int> m_heldForAFrame;           // keys shown to ImGui as down for one frame (see beginFrame)
  std::vector<ImWchar> m_deferredCharacters;  // typed in the frame of a Ctrl tap: given the next frame
  // Double-clicks found among the presses as GLFW delivers them: ImGui 1.86 keeps one press per button per
  // frame, so two clicks within one slow frame reach it as one. Each press is placed where the pointer's
  // motion events had brought it (not where it is when the events are read), and timed when it is read:
  // GLFW gives no event times, so after a stall two presses at the same place count as a double-click
  // however far apart they were. beginFrame() raises ImGui's click count of a pair it missed to 2.
  static constexpr int kButtons = 3;
  struct Press {
    double time = -1e9, x = 0, y = 0;
  };
  Press m_lastPress[kButtons];
  double m_cursorX = 0, m_cursorY = 0;  // from the cursor-position callback, in event order
  bool m_pendingDoubleClick[kButtons] = {};
  RgbaImage m_lastFrame;
  bool m_captureNext = false;
};

}  // namespace sharelens::gui
