// SPDX-License-Identifier: Apache-2.0
#include "packet_probe.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cxlpool::drivers {

hal::BackendReport probe_packet() {
  hal::BackendReport report{"NetPort", "packet", hal::BackendState::kAvailable, "AF_PACKET raw sockets"};
  // Protocol 0: the socket receives nothing, so probing has no side effect.
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int code = errno;
    report.state = hal::BackendState::kNotPresent;
    report.detail =
        std::string("AF_PACKET socket: ") + std::strerror(code) + (code == EPERM ? " (needs CAP_NET_RAW)" : "");
    return report;
  }
  ::close(fd);
  return report;
}

}  // namespace cxlpool::drivers
