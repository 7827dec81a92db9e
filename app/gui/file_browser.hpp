// A file browser of our own (ImGui has none), drawn inside the Open and Save As dialogs under their path
// field: the current folder's entries, folders first, each run directory, model directory, checkpoint and
// topology marked as such; a click puts the entry in the path field, a double-click on a folder enters it,
// on anything openable chooses it. ".." goes up; the folder follows a directory typed into the field.
// Saving, a click on a folder enters it and keeps the file name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace sharelens::gui {

struct BrowserEntry {
  std::string name;
  bool folder = false;
  std::string kind;  // "run", "model", "checkpoint", "topology", or empty
  uint64_t bytes = 0;
};

// The entries of `dir`: folders first, then files, each group by name ignoring case; dot entries left out;
// files only with one of `extensions` (".json", any case; all files when empty). Throws a named Error when
// the folder cannot be read.
std::vector<BrowserEntry> listFolder(const std::filesystem::path& dir,
                                     std::span<const std::string> extensions);

class FileBrowser {
 public:
  // `saving`: the field holds a file to write; entering a folder keeps the file's name.
  FileBrowser(std::vector<std::string> extensions, bool saving)
      : m_extensions(std::move(extensions)), m_saving(saving) {}
  // Draws the listing; `path` is the dialog's text field (capacity bytes). Returns true when an entry was
  // chosen by a double-click (the caller then acts on `path`).
  bool draw(char* path, size_t capacity, float height);

 private:
  void enter(const std::filesystem::path& folder);
  std::vector<std::string> m_extensions;
  bool m_saving;
  std::filesystem::path m_folder;
  std::vector<BrowserEntry> m_entries;
  std::string m_error;
  std::string m_lastField;  // the path field as last seen: a typed directory moves the listing there
};

}  // namespace sharelens::gui
