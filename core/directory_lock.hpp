// One writer per output directory (a run, a PostShare or experiment directory): an exclusive flock(2) on the
// directory itself, held for the lock's lifetime. The kernel drops it when its holder exits however it ends
// (SIGKILL included), so a killed writer never leaves a stale lock, and a second writer (a --resume started
// beside a live run, the rank of a launcher that was killed) is refused by name instead of interleaving.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace sharelens {

// Whether some process holds a DirectoryLock on `directory` now, read from /proc/locks without taking the
// lock (probing with flock would, for a moment, refuse a writer starting then). nullopt when it cannot be
// told (no /proc/locks, the directory gone): the caller must not assume the writer dead.
std::optional<bool> directoryHasWriter(const std::filesystem::path& directory);

class DirectoryLock {
 public:
  // Locks `directory` (which must exist) or throws a named Error; `what` names the job ("training run").
  DirectoryLock(const std::filesystem::path& directory, const std::string& what);
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  int m_fd = -1;
};

}  // namespace sharelens
