#include "app/gui/ui_probe.hpp"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // ImGuiWindow::Hidden

#include <algorithm>
#include <array>
#include <chrono>
#include <map>

#include "core/atomic_file.hpp"

namespace sharelens::gui::probe {
namespace {

struct Probe {
  std::string path;
  std::map<std::string, std::pair<float, float>> items;  // this frame's, in window pixels
  std::map<std::string, std::array<float, 4>>
      rects;  // the same items' rectangles: min x, min y, max x, max y
  Json facts = Json::object();
  std::chrono::steady_clock::time_point lastWrite{};
};

Probe& instance() {
  static Probe probe;
  return probe;
}

}  // namespace

void enable(std::string path) {
  instance().path = std::move(path);
}

bool enabled() {
  return !instance().path.empty();
}

void setItem(const std::string& key) {
  // A window that is not shown this frame is not clickable. An auto-resizing window (the Open dialog) is
  // measured hidden on its first frame, before it is placed: a test that clicked where its items were drawn
  // then would click beside the dialog.
  if (ImGui::GetCurrentWindowRead()->Hidden) return;
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  // Nor is one not yet laid out: on the app's first frame a tab bar's tabs are all an empty rectangle at
  // (0, 0), and a test that clicked there (the state file can hold that frame for a while) hit no tab.
  if (max.x <= min.x || max.y <= min.y) return;
  // Where a person clicks: the middle of a small widget, or near the start of a wide one (a table row),
  // on its label rather than on a column border that would resize the table.
  instance().items[key] = {min.x + std::min((max.x - min.x) / 2, 24.0f), (min.y + max.y) / 2};
  instance().rects[key] = {min.x, min.y, max.x, max.y};
}

void setArea(const std::string& key, float x0, float y0, float x1, float y1) {
  if (ImGui::GetCurrentWindowRead()->Hidden || x1 <= x0 || y1 <= y0) return;
  instance().items[key] = {(x0 + x1) / 2, (y0 + y1) / 2};
  instance().rects[key] = {x0, y0, x1, y1};
}

void setState(const std::string& key, Json value) {
  instance().facts[key] = std::move(value);
}

void clearState(const std::string& key) {
  instance().facts.erase(key);
}

void endFrame(GLFWwindow* window, int frame, const std::string& view) {
  Probe& p = instance();
  if (p.path.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - p.lastWrite >= std::chrono::milliseconds(200)) {
    p.lastWrite = now;
    int x = 0, y = 0;
    glfwGetWindowPos(window, &x, &y);  // items are drawn in window pixels: add where the window is
    Json items = Json::object();
    for (const auto& [key, at] : p.items)
      items[key] = {static_cast<int>(at.first) + x, static_cast<int>(at.second) + y};
    // Each item's rectangle in window pixels, and the window's size: a layout test checks that a toolbar's
    // buttons lie inside it.
    Json rects = Json::object();
    for (const auto& [key, r] : p.rects)
      rects[key] = {static_cast<int>(r[0]), static_cast<int>(r[1]), static_cast<int>(r[2]),
                    static_cast<int>(r[3])};
    const ImVec2 size = ImGui::GetIO().DisplaySize;
    const ImVec2 mouse = ImGui::GetIO().MousePos;  // where ImGui saw the pointer (window pixels)
    const Json out = {{"frame", frame},
                      {"view", view},
                      {"mouse", {static_cast<int>(mouse.x) + x, static_cast<int>(mouse.y) + y}},
                      {"mouse_down", ImGui::IsMouseDown(ImGuiMouseButton_Left)},  // as ImGui saw the button
                      {"items", items},
                      {"rects", rects},
                      {"window", {static_cast<int>(size.x), static_cast<int>(size.y)}},
                      {"state", p.facts}};
    try {
      writeFileAtomically(p.path, out.dump(1) + "\n");
    } catch (const std::exception&) {  // a test's file it cannot write: the window goes on
    }
  }
  p.items.clear();  // only what this frame drew is clickable
  p.rects.clear();
  p.facts = Json::object();
}

}  // namespace sharelens::gui::probe
