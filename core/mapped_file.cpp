#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace sharelens {

MappedFile MappedFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw Error({.what = "cannot open file",
                 .where = path.string(),
                 .found = std::strerror(err),
                 .hint = err == ENOENT ? "check the path" : "check the file's permissions"});
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(
        {.what = "not a regular file", .where = path.string(), .hint = "pass a file, not a directory"});
  }
  MappedFile file;
  file.m_path = path;
  file.m_size = static_cast<size_t>(st.st_size);
  if (file.m_size > 0) {
    void* p = ::mmap(nullptr, file.m_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error({.what = "cannot memory-map file", .where = path.string(), .found = std::strerror(err)});
    }
    file.m_data = static_cast<const std::byte*>(p);
    ::madvise(p, file.m_size, MADV_RANDOM);  // no readahead while the header is parsed
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_data(std::exchange(other.m_data, nullptr)),
      m_size(std::exchange(other.m_size, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (m_data) ::munmap(const_cast<std::byte*>(m_data), m_size);
    m_path = std::move(other.m_path);
    m_data = std::exchange(other.m_data, nullptr);
    m_size = std::exchange(other.m_size, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (m_data) ::munmap(const_cast<std::byte*>(m_data), m_size);
}

void MappedFile::adviseNormal() const {
  if (m_data) ::madvise(const_cast<std::byte*>(m_data), m_size, MADV_NORMAL);
}

void MappedFile::adviseSequential(uint64_t offset, uint64_t length) const {
  if (!m_data || length == 0) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  ::madvise(const_cast<std::byte*>(m_data) + start, offset + length - start, MADV_WILLNEED);
}

void MappedFile::release(uint64_t offset, uint64_t length) const {
  if (!m_data || length == 0 || offset >= m_size) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t end = std::min<uint64_t>(offset + length, m_size);
  const uint64_t first = (offset + page - 1) / page * page, last = end / page * page;  // whole pages only
  if (last > first) ::madvise(const_cast<std::byte*>(m_data) + first, last - first, MADV_DONTNEED);
}

}  // namespace sharelens
