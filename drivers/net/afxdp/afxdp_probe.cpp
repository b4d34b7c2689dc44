// SPDX-License-Identifier: Apache-2.0
#include "afxdp_probe.hpp"

#include "afxdp_lib_version.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#ifndef AF_XDP
#define AF_XDP 44
#endif

namespace cxlpool::drivers {

hal::BackendReport probe_afxdp() {
  hal::BackendReport report{"NetPort", "afxdp", hal::BackendState::kAvailable,
                            std::string("AF_XDP sockets, copy mode, queue 0; libxdp ") + CXLPOOL_LIBXDP_VERSION};
  const int fd = ::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int code = errno;
    report.state = hal::BackendState::kNotPresent;
    report.detail = std::string("AF_XDP socket: ") + std::strerror(code) +
                    (code == EAFNOSUPPORT ? " (kernel without CONFIG_XDP_SOCKETS)" : "") +
                    (code == EPERM ? " (needs CAP_NET_RAW)" : "");
    return report;
  }
  ::close(fd);
  return report;
}

}  // namespace cxlpool::drivers
