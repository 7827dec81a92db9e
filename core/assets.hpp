// Where the files ShareLens ships live (assets/: topology presets, experiments, colour maps):
// $SHARELENS_ASSETS when set, else assets/ beside the executable's build tree or install prefix
// (share/sharelens/assets), else the source tree it was built from.
#pragma once

#include <filesystem>

namespace sharelens {

std::filesystem::path assetsDirectory();

}  // namespace sharelens
