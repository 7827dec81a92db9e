#include "core/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace sharelens {

DirectoryLock::DirectoryLock(const std::filesystem::path& directory, const std::string& what) {
  m_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (m_fd < 0)
    throw Error({.what = "cannot open the directory to lock it",
                 .where = directory.string(),
                 .found = std::strerror(errno),
                 .hint = "check the directory exists and is readable"});
  while (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(m_fd);
    m_fd = -1;
    if (err == EWOULDBLOCK)
      throw Error({.what = "another process is writing this " + what,
                   .where = directory.string(),
                   .expected = "one writer at a time",
                   .found = "a live writer holds its lock",
                   .hint = "wait for it to finish or stop it (Ctrl-C saves its progress), then run again"});
    throw Error({.what = "cannot lock the directory",
                 .where = directory.string(),
                 .found = std::strerror(err),
                 .hint = "use a local file system that supports flock"});
  }
}

std::optional<bool> directoryHasWriter(const std::filesystem::path& directory) {
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0) return std::nullopt;
  std::ifstream locks("/proc/locks");
  if (!locks) return std::nullopt;
  // "1: FLOCK  ADVISORY  WRITE 1524 fe:00:5350490 0 EOF": kind, mode, access, pid, major:minor:inode (hex
  // device numbers, decimal inode), range. A lock another is blocked on ("1: -> FLOCK ...") is no holder.
  // Matched by inode alone: on btrfs stat()'s device is the subvolume's, not the one /proc/locks prints, and
  // a lock on another file with the same inode only hides "continue" (the safe way to be wrong). Any kind
  // of write lock counts (NFS shows flock as POSIX).
  const std::string inode = ":" + std::to_string(static_cast<unsigned long long>(st.st_ino));
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid, file;
    fields >> id >> kind;
    if (kind == "->") continue;
    fields >> mode >> access >> pid >> file;
    if (access == "WRITE" && file.size() > inode.size() && file.ends_with(inode)) return true;
  }
  return false;
}

DirectoryLock::~DirectoryLock() {
  if (m_fd >= 0) ::close(m_fd);  // closing the last descriptor releases the lock
}

}  // namespace sharelens
