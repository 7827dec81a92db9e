// FNV-1a 64-bit: content fingerprints for corpora, tokenizers and weights (not for security).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sharelens {

class Fnv1a {
 public:
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  uint64_t value() const { return m_state; }
  std::string hex() const;

 private:
  uint64_t m_state = 1469598103934665603ull;
};

std::string fnv1aHex(std::string_view s);

}  // namespace sharelens
