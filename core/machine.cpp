#include "core/machine.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

int freeLoopbackPort(const std::string& where) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Error({.what = "no free TCP port on the loopback interface (127.0.0.1)",
                 .where = where,
                 .expected = "a port the kernel binds on 127.0.0.1",
                 .found = reason,
                 .hint =
                     "check that the loopback interface is up (`ip link show lo`) and that the process may "
                     "open another file (`ulimit -n`)"});
  }
  const int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

}  // namespace sharelens
