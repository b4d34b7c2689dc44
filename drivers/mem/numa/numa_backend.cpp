// SPDX-License-Identifier: Apache-2.0
// Registers the numa backend (MemTier: NUMA nodes through libnuma; CPU-less nodes are CXL) with lib/hal's registry.
#include "cxlpool/hal/driver/mem_tier_driver.hpp"
#include "numa_page_placement.hpp"
#include "numa_probe.hpp"

namespace cxlpool::drivers {
namespace {

// mbind and move_pages need a kernel with NUMA support: the probe says.
Result<std::unique_ptr<hal::PagePlacement>> open_numa_placement() {
  const hal::BackendReport report = probe_numa();
  if (report.state != hal::BackendState::kAvailable) return fail(ENODEV, report.detail);
  return make_numa_page_placement();
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(numa, cxlpool::hal::MemTierOps, "numa", 10, &cxlpool::drivers::probe_numa,
                         (cxlpool::hal::MemTierOps{&cxlpool::drivers::open_numa_placement, nullptr}))
