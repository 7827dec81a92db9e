// The GUI plugin's entry point. libsharelens_gui.so holds the window and its views; `sharelens` without a
// subcommand loads it (app/gui_loader.cpp), so the headless executable links no GL, GLFW or ImGui.
#include <string>
#include <vector>

#include "app/gui/gui_main.hpp"

extern "C" __attribute__((visibility("default"))) int sharelens_gui_main(int argc, const char* const* argv) {
  return sharelens::gui::runGuiFromArgs(std::vector<std::string>(argv, argv + argc));
}
