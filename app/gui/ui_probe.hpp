// What a scripted test of the real window needs from the app (`--ui-state FILE`): where chosen widgets are
// on the screen, so that xdotool can click them as a person would, and what the views hold, so that the
// test can check what the click did. The file is rewritten atomically a few times a second:
//   {"frame": N, "view": "Model", "items": {"tensor/layers.0.wq": [x, y], ...}, "state": {...}}
// Item positions are screen pixels where a person would click: the centre of a small widget, 24 pixels into
// a wide one (on its label, away from table borders). UI thread only; without --ui-state every
// call returns at once.
#pragma once

#include <string>

#include "core/json_util.hpp"

struct GLFWwindow;

namespace sharelens::gui::probe {

void enable(std::string path);  // --ui-state FILE
bool enabled();
void item(const std::string& key);               // after a widget: its rectangle, under `key`
void state(const std::string& key, Json value);  // a fact a view holds now ("model/details")
void endFrame(GLFWwindow* window, int frame, const std::string& view);  // writes at most 5 times a second

}  // namespace sharelens::gui::probe
