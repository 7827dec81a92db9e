// Crash-safe file replacement: write a temporary file beside the target, fsync it, rename it over the
// target, fsync the directory. A reader (or a process restarted after SIGKILL) sees either the old file or
// the complete new one. An AtomicFile destroyed without commit() removes its temporary file.
#pragma once

#include <filesystem>
#include <string_view>

namespace sharelens {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();  // fsync + rename + fsync(dir); throws sharelens::Error on failure

 private:
  std::filesystem::path m_target;
  std::filesystem::path m_temp;
  int m_fd = -1;
  bool m_committed = false;
};

void writeFileAtomically(const std::filesystem::path& target, std::string_view content);

// The same promise for a whole output directory (a derived model: weights, config, tokenizer): files are
// written into a hidden staging directory beside the target, and commit() renames it into place. A
// StagedDirectory destroyed without commit() removes the staging directory, so a failed or refused write
// leaves nothing behind, and a new one for the same target removes the staging directories of killed
// writers. The target must not exist yet (or be an empty directory).
class StagedDirectory {
 public:
  explicit StagedDirectory(std::filesystem::path target);
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;
  ~StagedDirectory();

  const std::filesystem::path& path() const { return m_staging; }  // write here
  const std::filesystem::path& target() const { return m_target; }
  void commit();  // rename into place + fsync(parent); throws sharelens::Error on failure

 private:
  std::filesystem::path m_target;
  std::filesystem::path m_staging;
  bool m_committed = false;
};
void fsyncDirectory(const std::filesystem::path& directory);
std::string readTextFile(const std::filesystem::path& path);  // throws a named Error

}  // namespace sharelens
