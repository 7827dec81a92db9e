// GUI entry point: sharelens [PATH] [--screenshot FILE --frames N] [--view NAME] [--demo]
#pragma once

#include <string>
#include <vector>

namespace sharelens::gui {

int runGuiFromArgs(const std::vector<std::string>& args);

}  // namespace sharelens::gui
