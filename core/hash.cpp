#include "core/hash.hpp"

#include <cstdio>

namespace sharelens {

void Fnv1a::update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    m_state ^= p[i];
    m_state *= 1099511628211ull;
  }
}

std::string Fnv1a::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(m_state));
  return buf;
}

std::string fnv1aHex(std::string_view s) {
  Fnv1a h;
  h.update(s);
  return h.hex();
}

}  // namespace sharelens
