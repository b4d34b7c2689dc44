// SPDX-License-Identifier: Apache-2.0
// Driver SDK for MemTier backends (drivers/mem/*): what a memory driver
// offers beyond its probe. Each operation is optional (null: the backend
// has none); users reach them through hal::open_page_placement and
// hal::discover_mem_regions.
#pragma once

#include <memory>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "cxlpool/hal/mem_tier.hpp"
#include "cxlpool/hal/page_placement.hpp"

namespace cxlpool::hal {

struct MemTierOps {
  static constexpr BackendClass kClass = BackendClass::kMemTier;
  // Binds and moves pages among NUMA nodes (numa). An error when this host
  // cannot (no NUMA support in the kernel), with the reason.
  Result<std::unique_ptr<PagePlacement>> (*page_placement)();
  // The CXL regions the backend finds (dax); empty, not an error, on a host
  // without any.
  Result<std::vector<MemRegionInfo>> (*regions)();
};

}  // namespace cxlpool::hal
