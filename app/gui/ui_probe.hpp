// What a scripted test of the real window needs from the app (`--ui-state FILE`): where chosen widgets are
// on the screen, so that xdotool can click them as a person would, and what the views hold, so that the
// test can check what the click did. The file is rewritten atomically a few times a second:
//   {"frame": N, "view": "Model", "items": {"tensor/layers.0.wq": [x, y], ...},
//    "rects": {"tensor/layers.0.wq": [x0, y0, x1, y1], ...}, "window": [w, h], "state": {...}}
// Item positions are screen pixels where a person would click: the centre of a small widget, 24 pixels into
// a wide one (on its label, away from table borders); rects are the items' rectangles in window pixels (no
// screen offset), for layout checks. UI thread only; without --ui-state every
// call returns at once.
#pragma once

#include <string>
#include <string_view>

#include "core/json_util.hpp"

struct GLFWwindow;

namespace sharelens::gui::probe {

void enable(std::string path);  // --ui-state FILE
bool enabled();
// After a widget: its rectangle, under the key its parts make ("run/", label, "/stop"); the key is built only
// when a test is listening.
void setItem(const std::string& key);
template <class... Parts>
void item(const Parts&... parts) {
  if (!enabled()) return;
  std::string key;
  (key.append(std::string_view(parts)), ...);
  setItem(key);
}
// A region a view draws itself (a cell of a painted column), not an ImGui item: its rectangle in window
// pixels, clicked at its middle.
void setArea(const std::string& key, float x0, float y0, float x1, float y1);
template <class... Parts>
void area(float x0, float y0, float x1, float y1, const Parts&... parts) {
  if (!enabled()) return;
  std::string key;
  (key.append(std::string_view(parts)), ...);
  setArea(key, x0, y0, x1, y1);
}
void setState(const std::string& key, Json value);
void clearState(const std::string& key);  // the fact no longer holds (nothing is shown, say)
// A fact a view holds now ("model/details"): `make` builds it only when a test is listening.
template <class Make>
void state(const std::string& key, Make&& make) {
  if (enabled()) setState(key, make());
}
void endFrame(GLFWwindow* window, int frame, const std::string& view);  // writes at most 5 times a second

}  // namespace sharelens::gui::probe
