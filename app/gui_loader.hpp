// Starts the GUI from its plugin, libsharelens_gui.so (app/gui/gui_plugin.cpp): found beside the executable,
// or at $SHARELENS_GUI_PLUGIN. A machine without the plugin or without libGL/libglfw gets a named error and
// exit code 2; every subcommand works there regardless.
#pragma once

#include <string>
#include <vector>

namespace sharelens {

int runGuiPlugin(const std::vector<std::string>& args);

}  // namespace sharelens
