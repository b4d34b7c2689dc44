// SPDX-License-Identifier: Apache-2.0
#include "uring_probe.hpp"

#include <liburing.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"
#include "uring_lib_version.h"
#include "uring_memlock.hpp"

namespace cxlpool::drivers {
namespace {

std::string disabled_sysctl() {
  auto v = SysfsRoot("/").read_string("/proc/sys/kernel/io_uring_disabled");
  return v ? " (kernel.io_uring_disabled=" + *v + ")" : "";
}

}  // namespace

hal::BackendReport probe_uring() {
  hal::BackendReport report{"BlockEngine", "uring", hal::BackendState::kNotPresent, ""};
  const std::string lib = std::string("liburing ") + CXLPOOL_LIBURING_VERSION;
  io_uring ring{};
  const int rc = io_uring_queue_init(8, &ring, 0);
  if (rc < 0) {
    const int err = -rc;
    const bool refused = err == ENOSYS || err == EPERM;
    report.state = refused ? hal::BackendState::kNotPresent : hal::BackendState::kFailed;
    report.detail = errno_message("io_uring_setup", err) + (refused ? disabled_sysctl() : "") +
                    (err == ENOMEM ? uring_memlock_hint() : "") + ", " + lib;
    return report;
  }
  int ops = 0;
  if (io_uring_probe* probe = io_uring_get_probe_ring(&ring)) {
    for (int op = 0; op <= probe->last_op; ++op) ops += io_uring_opcode_supported(probe, op);
    io_uring_free_probe(probe);
  }
  char features[16];
  snprintf(features, sizeof features, "%#x", ring.features);
  io_uring_queue_exit(&ring);
  report.state = hal::BackendState::kAvailable;
  report.detail = lib + ", " + std::to_string(ops) + " opcodes, features " + features;
  return report;
}

}  // namespace cxlpool::drivers
