// SPDX-License-Identifier: Apache-2.0
#include "verbs_probe.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_verbs() {
  hal::BackendReport report{"Transport", "verbs", hal::BackendState::kNotPresent, ""};
  int count = 0;
  errno = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) {
    // ENOSYS: the kernel has no RDMA (uverbs) support at all.
    const int err = errno;
    report.detail = "no RDMA devices" + (err != 0 ? " (" + errno_message("ibv_get_device_list", err) + ")"
                                                  : std::string());
    return report;
  }
  if (count == 0) {
    report.detail = "no RDMA devices";
  } else {
    report.state = hal::BackendState::kAvailable;
    report.detail = std::to_string(count) + " RDMA device(s): ";
    for (int i = 0; i < count; ++i) {
      report.detail += (i ? ", " : "") + std::string(ibv_get_device_name(devices[i]));
    }
  }
  ibv_free_device_list(devices);
  return report;
}

}  // namespace cxlpool::drivers
