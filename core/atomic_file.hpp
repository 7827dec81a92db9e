// Crash-safe file replacement: write a temporary file beside the target, fsync it, rename it over the
// target, fsync the directory. A reader (or a process restarted after SIGKILL) sees either the old file or
// the complete new one. An AtomicFile destroyed without commit() removes its temporary file. A symbolic link
// is followed (the file it names is replaced, the link kept); a character device or a FIFO (/dev/null,
// /dev/stdout into a pipe) is written into directly, never replaced; a directory, block device or socket is
// a named error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
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
  bool m_direct = false;  // the target is a character device or FIFO: written in place

  static std::filesystem::path linkTarget(std::filesystem::path path);
  void openInPlace();
};

void writeFileAtomically(const std::filesystem::path& target, std::string_view content);

// The same promise for a whole output directory (a derived model: weights, config, tokenizer): files are
// written into a hidden staging directory beside the target, and commit() renames it into place. The target
// must not exist yet (or be an empty directory).
//   Disposable (the default): the staging directory is .NAME.tmp-PID-N; destroyed without commit() it is
//     removed, so a failed or refused write leaves nothing behind, and a new one for the same target removes
//     the staging directories of killed writers.
//   Resumable (a long job that continues where it stopped, such as a compression sweep): the staging
//     directory is .NAME.partial, locked (core/directory_lock.hpp) while this object lives and kept when it
//     is destroyed without commit(), so the same job run again finds its finished parts there (resumed()).
class StagedDirectory {
 public:
  enum class Kind : uint8_t { Disposable, Resumable };
  explicit StagedDirectory(std::filesystem::path target, Kind kind = Kind::Disposable);
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;
  ~StagedDirectory();

  const std::filesystem::path& path() const { return m_staging; }  // write here
  const std::filesystem::path& target() const { return m_target; }
  bool resumed() const { return m_resumed; }  // Resumable: an earlier, unfinished writer's directory
  void commit();   // rename into place + fsync(parent); throws sharelens::Error on failure
  void discard();  // removes the staging directory now (a Resumable one that holds nothing worth keeping)

 private:
  std::filesystem::path m_target;
  std::filesystem::path m_staging;
  Kind m_kind = Kind::Disposable;
  bool m_committed = false, m_resumed = false;
  std::unique_ptr<class DirectoryLock> m_lock;
};
void fsyncDirectory(const std::filesystem::path& directory);
std::string readTextFile(const std::filesystem::path& path);  // throws a named Error

}  // namespace sharelens
