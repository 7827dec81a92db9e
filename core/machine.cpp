#include "core/machine.hpp"

#include <unistd.h>

#include "core/error.hpp"
#include "core/naming.hpp"

namespace sharelens {

int64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size : 0;
}

void requireFitsInMemory(double bytes, const std::string& what, const std::string& hint) {
  const int64_t memory = physicalMemoryBytes();
  if (memory == 0 || bytes <= static_cast<double>(memory)) return;
  throw Error({.what = "does not fit in this machine's memory",
               .where = what,
               .expected = "at most " + humanBytes(static_cast<double>(memory)),
               .found = humanBytes(bytes) + " needed",
               .hint = hint});
}

}  // namespace sharelens
