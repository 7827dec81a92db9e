#include "core/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

DirectoryLock::~DirectoryLock() {
  if (m_fd >= 0) ::close(m_fd);  // closing the last descriptor releases the lock
}

}  // namespace sharelens
