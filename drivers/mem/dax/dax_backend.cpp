// SPDX-License-Identifier: Apache-2.0
// Registers the dax backend (MemTier: CXL regions and device-DAX through libcxl/libdaxctl) with lib/hal's registry.
#include "cxl_regions.hpp"
#include "cxlpool/hal/driver/mem_tier_driver.hpp"
#include "dax_probe.hpp"

namespace cxlpool::drivers {
namespace {

Result<std::vector<hal::MemRegionInfo>> list_cxl_regions() {
  auto regions = discover_cxl_regions();
  if (!regions) return tl::unexpected(regions.error());
  std::vector<hal::MemRegionInfo> out;
  for (const auto& r : *regions) {
    out.push_back({r.name, r.size_bytes, r.mode, r.memdevs.size(), r.dax_device, r.numa_node});
  }
  return out;
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(dax, cxlpool::hal::MemTierOps, "dax", 20, &cxlpool::drivers::probe_cxl,
                         (cxlpool::hal::MemTierOps{nullptr, &cxlpool::drivers::list_cxl_regions}))
