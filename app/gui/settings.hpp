// Persistent settings ($XDG_CONFIG_HOME/sharelens/settings.json): recent files, colormap, theme, the last
// view, and where embedded runs and the demo live. The energy threshold is the session's own: every session
// starts at the papers' 95%, so that no result is read at a threshold chosen days before and forgotten.
// Written atomically; a broken file is replaced by defaults with a note in the error panel, never a crash.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "app/plot/colormap.hpp"

namespace sharelens::gui {

struct Settings {
  std::vector<std::string> recent;  // most recent first
  plot::Colormap colormap = plot::Colormap::Viridis;
  double threshold = 0.95;  // this session's only (not saved)
  bool darkTheme = true;
  std::string runsDirectory;  // embedded runs go here
  std::string lastView = "Model";

  void addRecent(const std::string& path);
  static std::filesystem::path file();
  static std::filesystem::path dataDirectory();     // $XDG_DATA_HOME/sharelens
  static std::filesystem::path exportsDirectory();  // where figures and tables are offered to be saved
  // Loads; on a broken file returns defaults and sets `problem`.
  static Settings load(std::string* problem = nullptr);
  void save() const;
};

}  // namespace sharelens::gui
