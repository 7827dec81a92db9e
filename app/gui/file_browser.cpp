#include "app/gui/file_browser.hpp"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "app/gui/ui_probe.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/text.hpp"

namespace sharelens::gui {
namespace fs = std::filesystem;
namespace {

std::string kindOf(const fs::directory_entry& e) {
  std::error_code ec;
  if (e.is_directory(ec)) {  // non-throwing checks: a folder we may not enter is listed, not fatal
    if (fs::exists(e.path() / "run.json", ec)) return "run";
    if (fs::exists(e.path() / "model.safetensors", ec) ||
        fs::exists(e.path() / "model.safetensors.index.json", ec))
      return "model";
    return "";
  }
  const std::string ext = asciiLower(e.path().extension().string());
  if (ext == ".safetensors") return "checkpoint";
  if (ext == ".json" && e.path().filename() != "config.json") return "topology";
  return "";
}

// Asked of the row just drawn, not of Selectable's return: when the second press and the first release fall
// in one frame, ImGui sees the button held throughout and no click in the frame where Platform finds the
// double-click.
bool itemDoubleClicked() {
  return ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
}

}  // namespace

std::vector<BrowserEntry> listFolder(const fs::path& dir, std::span<const std::string> extensions) {
  std::error_code ec;
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec)
    throw Error({.what = "cannot list the folder",
                 .where = dir.string(),
                 .found = ec.message(),
                 .hint = "type another path, or go up with .."});
  std::vector<BrowserEntry> out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;  // an entry that vanished or cannot be read ends the listing, it does not throw
    const fs::directory_entry& e = *it;
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    BrowserEntry entry{name, e.is_directory(ec), kindOf(e), 0};
    if (!entry.folder) {
      const std::string ext = asciiLower(e.path().extension().string());
      if (!extensions.empty() && std::none_of(extensions.begin(), extensions.end(),
                                              [&](const std::string& x) { return asciiLower(x) == ext; }))
        continue;
      entry.bytes = e.file_size(ec);
    }
    out.push_back(std::move(entry));
  }
  std::sort(out.begin(), out.end(), [](const BrowserEntry& a, const BrowserEntry& b) {
    if (a.folder != b.folder) return a.folder;
    const std::string x = asciiLower(a.name), y = asciiLower(b.name);
    return x != y ? x < y : a.name < b.name;
  });
  return out;
}

void FileBrowser::enter(const fs::path& folder) {
  m_folder = folder;
  m_error.clear();
  try {
    m_entries = listFolder(folder, m_extensions);
  } catch (const Error& e) {
    m_entries.clear();
    m_error = e.what();
  } catch (const fs::filesystem_error& e) {
    m_entries.clear();
    m_error = folder.string() + ": " + e.code().message();
  }
}

bool FileBrowser::draw(char* path, size_t capacity, float height) {
  // The listing follows the field: a typed directory, else the folder of a typed file, else home.
  if (m_folder.empty() || m_lastField != path) {
    std::error_code ec;
    const fs::path typed = path;
    if (!typed.empty() && fs::is_directory(typed, ec))
      enter(typed);
    else if (!typed.empty() && typed.has_parent_path() && fs::is_directory(typed.parent_path(), ec))
      enter(typed.parent_path());
    else if (m_folder.empty())
      enter(std::getenv("HOME") ? fs::path(std::getenv("HOME")) : fs::current_path(ec));
    m_lastField = path;
  }
  ImGui::TextDisabled("%s", m_folder.c_str());
  bool chosen = false;
  auto put = [&](const fs::path& p) {
    std::snprintf(path, capacity, "%s", p.c_str());
    m_lastField = path;
  };
  // A folder to enter is applied after the listing is drawn (entering replaces the entries being drawn).
  std::optional<fs::path> next;
  if (ImGui::BeginChild("##browser", ImVec2(0, height), true)) {
    if (m_folder.has_parent_path() && m_folder != m_folder.root_path()) {
      const bool clicked = ImGui::Selectable("..", false, ImGuiSelectableFlags_AllowDoubleClick);
      if ((clicked && m_saving) || itemDoubleClicked()) next = m_folder.parent_path();
    }
    if (!m_error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s", m_error.c_str());
    ImGuiListClipper clipper;  // only the rows on screen: a folder may hold thousands of files
    clipper.Begin(static_cast<int>(m_entries.size()));
    while (clipper.Step())
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const BrowserEntry& e = m_entries[static_cast<size_t>(i)];
        const std::string label = (e.folder ? "[" + e.name + "]" : e.name) + "##" + e.name;
        const bool selected = m_folder / e.name == fs::path(path);
        const bool clicked =
            ImGui::Selectable(label.c_str(), selected, ImGuiSelectableFlags_AllowDoubleClick);
        const bool doubleClicked = itemDoubleClicked();
        probe::item("browser/", e.name);
        if (m_saving && e.folder) {
          if (clicked || doubleClicked) next = m_folder / e.name;  // saving: into the folder, same file name
        } else if (clicked || doubleClicked) {
          put(m_folder / e.name);
          if (doubleClicked) {
            if (e.folder && e.kind.empty())
              next = m_folder / e.name;
            else
              chosen = true;
          }
        }
        if (!e.kind.empty()) {  // SameLine only before an item: an empty one would pull the next row up
          ImGui::SameLine(ImGui::GetWindowWidth() * 0.62f);
          ImGui::TextColored(ImVec4(0.45f, 0.75f, 1, 1), "%s", e.kind.c_str());
        }
        if (!e.folder) {
          ImGui::SameLine(ImGui::GetWindowWidth() * 0.78f);
          ImGui::TextDisabled("%s", humanBytes(static_cast<double>(e.bytes)).c_str());
        }
      }
  }
  ImGui::EndChild();
  if (next) {
    const fs::path name = fs::path(path).filename();
    enter(*next);
    if (m_saving) put(m_folder / name);  // the same file name in the new folder
  }
  return chosen;
}

}  // namespace sharelens::gui
