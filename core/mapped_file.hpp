// A read-only memory map of a whole file. Mapping is O(1); pages are read only when touched, and the map
// starts with readahead off, so opening a large checkpoint and parsing its header reads only the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace sharelens {

class MappedFile {
 public:
  // Throws sharelens::Error naming the path when the file cannot be opened or mapped.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {m_data, m_size}; }
  uint64_t size() const { return m_size; }
  const std::filesystem::path& path() const { return m_path; }

  // Tells the kernel a sequential read of [offset, offset+length) is coming (readahead hint only).
  void adviseSequential(uint64_t offset, uint64_t length) const;
  // Drops the pages of [offset, offset+length) from this process's resident set (MADV_DONTNEED on the whole
  // pages inside it): a reader that has converted a tensor and will not read it again keeps its RSS down, and
  // a later read simply faults the pages back in from the page cache.
  void release(uint64_t offset, uint64_t length) const;
  // Maps open with readahead off (MADV_RANDOM) so that parsing a header reads only its own pages;
  // call this afterwards to restore normal readahead for the data.
  void adviseNormal() const;

 private:
  std::filesystem::path m_path;
  const std::byte* m_data = nullptr;
  size_t m_size = 0;
};

}  // namespace sharelens
