// SPDX-License-Identifier: Apache-2.0
#include "dpdk_probe.hpp"

#include <rte_version.h>

#include <string>

#include "cxlpool/common/sysfs_root.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/huge_pages.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_dpdk() {
  hal::BackendReport report{"NetPort", "dpdk", hal::BackendState::kAvailable, rte_version()};
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (!pool) {
    report.detail += "; huge pages unknown (" + pool.error().message + "): EAL needs --no-huge";
  } else if (pool->total == 0) {
    report.detail += "; no huge pages configured: EAL needs --no-huge";
  } else {
    report.detail += "; " + std::to_string(pool->free) + " of " + std::to_string(pool->total) +
                     " huge pages of " + format_size(pool->page_size) + " free";
  }
  return report;
}

}  // namespace cxlpool::drivers
