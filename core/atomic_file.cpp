#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/directory_lock.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

[[noreturn]] void throwIo(const std::string& what, const std::filesystem::path& path, int err) {
  throw Error(
      {.what = what,
       .where = path.string(),
       .found = std::strerror(err),
       .hint = err == ENOSPC ? "free some disk space" : "check the directory exists and is writable"});
}

// A temporary's name is its target's, a marker, the writer's process id and a counter: NAME.tmp.PID.N for a
// file, .NAME.tmp-PID-N for a staging directory.
constexpr std::string_view kFileMarker = ".tmp.", kDirectoryMarker = ".tmp-";

std::filesystem::path tempPathFor(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  auto name = target.filename().string() + std::string(kFileMarker) + std::to_string(::getpid()) + "." +
              std::to_string(counter.fetch_add(1));
  return target.parent_path() / name;
}

// Removes what a killed earlier writer of the same target left in `directory`: entries named `prefix` + PID
// + a separator whose process no longer exists (a live writer's temporaries, ours included, are kept).
void removeStaleTemporaries(const std::filesystem::path& directory, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(directory.empty() ? "." : directory, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    size_t digits = prefix.size();
    while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
    if (digits == prefix.size() || digits - prefix.size() > 9 || digits == name.size() ||
        (name[digits] != '.' && name[digits] != '-'))
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(prefix.size(), digits - prefix.size())));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    fs::remove_all(it->path(), ignored);
  }
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : m_target(std::move(target)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // What the path leads to, links followed (/dev/stdout -> /proc/self/fd/1 -> a pipe included).
  const fs::file_status status = fs::status(m_target, ec);
  if (fs::is_character_file(status) || fs::is_fifo(status)) {
    openInPlace();
    return;
  }
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw Error({.what = fs::is_directory(status) ? "the output file is a directory" : "cannot write here",
                 .where = m_target.string(),
                 .expected = "a regular file, a character device such as /dev/null, or a pipe",
                 .found = fs::is_directory(status)    ? "a directory"
                          : fs::is_block_file(status) ? "a block device"
                                                      : "a socket or another special file",
                 .hint = "choose a file path"});
  m_target = linkTarget(m_target);
  if (m_target.has_parent_path() && !fs::exists(m_target.parent_path()))
    throw Error({.what = "directory does not exist",
                 .where = m_target.parent_path().string(),
                 .hint = "create it first or choose another output path"});
  removeStaleTemporaries(m_target.parent_path(), m_target.filename().string() + std::string(kFileMarker));
  m_temp = tempPathFor(m_target);
  m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (m_fd < 0) throwIo("cannot create file", m_temp, errno);
}

// A symbolic link is followed to the file it names (a dangling one too), so that the rename replaces that
// file and the link stays; renaming over the link had replaced it with a plain file. Relative targets are
// read from the link's directory; a chain longer than 40 links (the kernel's limit) is an error.
std::filesystem::path AtomicFile::linkTarget(std::filesystem::path path) {
  namespace fs = std::filesystem;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) return path;
    const fs::path next = fs::read_symlink(path, ec);
    if (ec) throwIo("cannot read the symbolic link", path, ec.value());
    path = next.is_absolute() ? next : path.parent_path() / next;
  }
  throwIo("cannot follow the symbolic link", path, ELOOP);
}

// A character device or a FIFO is written into where it is, never replaced: renaming a file over /dev/null as
// root turned the machine's null device into a plain file. A FIFO without a reader is an error, not a wait
// forever; a reader that goes away is an EPIPE error (main ignores SIGPIPE).
void AtomicFile::openInPlace() {
  m_fd = ::open(m_target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (m_fd < 0) {
    if (errno == ENXIO)
      throw Error({.what = "nothing reads the pipe",
                   .where = m_target.string(),
                   .expected = "a reader at the other end",
                   .hint = "start the reader first, or write to a file"});
    throwIo("cannot open for writing", m_target, errno);
  }
  ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) & ~O_NONBLOCK);
  m_direct = true;
}

AtomicFile::~AtomicFile() {
  if (m_fd >= 0) ::close(m_fd);
  if (!m_committed && !m_direct) ::unlink(m_temp.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(m_fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwIo("write failed", m_direct ? m_target : m_temp, errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (m_direct) {  // nothing to rename; a device or pipe has no fsync to ask for
    const int rc = ::close(m_fd);
    m_fd = -1;
    if (rc != 0) throwIo("close failed", m_target, errno);
    m_committed = true;
    return;
  }
  if (::fsync(m_fd) != 0) throwIo("fsync failed", m_temp, errno);
  if (::close(m_fd) != 0) {
    m_fd = -1;
    throwIo("close failed", m_temp, errno);
  }
  m_fd = -1;
  if (::rename(m_temp.c_str(), m_target.c_str()) != 0) throwIo("rename failed", m_target, errno);
  m_committed = true;
  fsyncDirectory(m_target.has_parent_path() ? m_target.parent_path() : std::filesystem::path("."));
}

void writeFileAtomically(const std::filesystem::path& target, std::string_view content) {
  AtomicFile file(target);
  file.write(content);
  file.commit();
}

StagedDirectory::StagedDirectory(std::filesystem::path target, Kind kind)
    : m_target(std::move(target)), m_kind(kind) {
  namespace fs = std::filesystem;
  if (m_target.filename().empty()) m_target = m_target.parent_path();  // "out/" names "out"
  std::error_code ec;
  if (fs::exists(m_target, ec) && !(fs::is_directory(m_target, ec) && fs::is_empty(m_target, ec)))
    throw Error({.what = "the output directory already exists and is not empty",
                 .where = m_target.string(),
                 .hint = "choose a new directory, or remove this one first"});
  const fs::path parent = m_target.has_parent_path() ? m_target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throwIo("cannot create directory", parent, ec.value());
  if (m_kind == Kind::Resumable) {
    m_staging = parent / ("." + m_target.filename().string() + ".partial");
    m_resumed = fs::is_directory(m_staging, ec);
    if (!m_resumed && (!fs::create_directory(m_staging, ec) || ec))
      throwIo("cannot create directory", m_staging, ec ? ec.value() : EEXIST);
    m_lock = std::make_unique<DirectoryLock>(m_staging, "unfinished output");
    return;
  }
  const std::string prefix = "." + m_target.filename().string() + std::string(kDirectoryMarker);
  removeStaleTemporaries(parent, prefix);
  static std::atomic<unsigned> counter{0};
  m_staging = parent / (prefix + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)));
  fs::remove_all(m_staging, ec);
  if (!fs::create_directory(m_staging, ec) || ec)
    throwIo("cannot create directory", m_staging, ec ? ec.value() : EEXIST);
}

StagedDirectory::~StagedDirectory() {
  if (m_committed || m_kind == Kind::Resumable) return;
  std::error_code ec;
  std::filesystem::remove_all(m_staging, ec);
}

void StagedDirectory::discard() {
  std::error_code ec;
  std::filesystem::remove_all(m_staging, ec);
  m_committed = true;  // nothing left to commit or to remove
}

void StagedDirectory::commit() {
  std::error_code ec;
  if (std::filesystem::is_directory(m_target, ec))
    std::filesystem::remove(m_target, ec);  // empty, checked above
  if (::rename(m_staging.c_str(), m_target.c_str()) != 0) throwIo("rename failed", m_target, errno);
  m_committed = true;
  fsyncDirectory(m_target.has_parent_path() ? m_target.parent_path() : std::filesystem::path("."));
}

void fsyncDirectory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throwIo("cannot open directory for fsync", directory, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throwIo("fsync of directory failed", directory, err);
}

std::string readTextFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))  // an ifstream opens a directory and reads nothing
    throw Error({.what = "expected a file, found a directory",
                 .where = path.string(),
                 .expected = "a text file",
                 .found = "a directory",
                 .hint = "name a file inside it"});
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error({.what = "cannot open file",
                 .where = path.string(),
                 .found = std::strerror(errno),
                 .hint = "check the path"});
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

}  // namespace sharelens
