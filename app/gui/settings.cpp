#include "app/gui/settings.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/atomic_file.hpp"
#include "core/json_util.hpp"

namespace fs = std::filesystem;

namespace sharelens::gui {
namespace {

fs::path xdg(const char* variable, const char* fallback) {
  if (const char* v = std::getenv(variable); v && *v) return v;
  if (const char* home = std::getenv("HOME")) return fs::path(home) / fallback;
  return fs::temp_directory_path();
}

}  // namespace

void Settings::addRecent(const std::string& path) {
  std::erase(recent, path);
  recent.insert(recent.begin(), path);
  if (recent.size() > 12) recent.resize(12);
}

fs::path Settings::file() {
  return xdg("XDG_CONFIG_HOME", ".config") / "sharelens" / "settings.json";
}
fs::path Settings::dataDirectory() {
  return xdg("XDG_DATA_HOME", ".local/share") / "sharelens";
}

fs::path Settings::exportsDirectory() {
  return dataDirectory() / "exports";
}

Settings Settings::load(std::string* problem) {
  Settings s;
  s.runsDirectory = (dataDirectory() / "runs").string();
  if (!fs::exists(file())) return s;
  try {
    const Json j = readJsonFile(file());
    s.recent = j.value("recent", s.recent);
    if (auto c = plot::parseColormap(j.value("colormap", std::string("viridis")))) s.colormap = *c;
    s.darkTheme = j.value("dark_theme", s.darkTheme);
    s.runsDirectory = j.value("runs_directory", s.runsDirectory);
    s.lastView = j.value("last_view", s.lastView);
  } catch (const std::exception& e) {
    if (problem) *problem = std::string("settings ignored: ") + e.what();
  }
  return s;
}

void Settings::save() const {
  fs::create_directories(file().parent_path());
  const Json j = {{"recent", recent},
                  {"colormap", plot::colormapName(colormap)},
                  {"dark_theme", darkTheme},
                  {"runs_directory", runsDirectory},
                  {"last_view", lastView}};
  writeFileAtomically(file(), j.dump(2) + "\n");
}

}  // namespace sharelens::gui
