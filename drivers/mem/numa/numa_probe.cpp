// SPDX-License-Identifier: Apache-2.0
#include "numa_probe.hpp"

#include <numa.h>

#include <string>

#include "numa_lib_version.h"

namespace cxlpool::drivers {

hal::BackendReport probe_numa() {
  hal::BackendReport report{"MemTier", "numa", hal::BackendState::kNotPresent, ""};
  if (numa_available() < 0) {
    report.detail = "kernel without NUMA support (get_mempolicy failed), libnuma " +
                    std::string(CXLPOOL_LIBNUMA_VERSION);
    return report;
  }
  const int nodes = numa_num_configured_nodes();
  report.state = hal::BackendState::kAvailable;
  report.detail = std::to_string(nodes) + " node(s), libnuma " + CXLPOOL_LIBNUMA_VERSION;
  return report;
}

}  // namespace cxlpool::drivers
