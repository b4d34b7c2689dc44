// SPDX-License-Identifier: Apache-2.0
// hal::open_page_placement and hal::discover_mem_regions: what the daemon
// asks of MemTier backends beyond their probes.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/mem_tier_driver.hpp"

namespace cxlpool::hal {

Result<std::unique_ptr<PagePlacement>> open_page_placement(BackendSkips* skipped) {
  auto placers = backends_offering(BackendClass::kMemTier, "place pages",
                                   &has_operation<MemTierOps, &MemTierOps::page_placement>, skipped);
  if (!placers) return tl::unexpected(placers.error());
  Error last{ENODEV, "no MemTier backend places pages here"};
  for (const BackendDescriptor* d : *placers) {
    auto placement = backend_ops<MemTierOps>(*d)->page_placement();
    if (placement) return placement;
    last = backend_error(*d, placement.error());
    if (skipped != nullptr) skipped->push_back({d->name, placement.error().message});
  }
  return tl::unexpected(last);
}

Result<std::vector<MemRegionInfo>> discover_mem_regions() {
  auto finders = backends_offering(BackendClass::kMemTier, "discover regions",
                                   &has_operation<MemTierOps, &MemTierOps::regions>, nullptr);
  if (!finders) {
    // No backend that looks for regions: there are none to report.
    if (finders.error().code == ENOTSUP) return std::vector<MemRegionInfo>{};
    return tl::unexpected(finders.error());
  }
  std::vector<MemRegionInfo> all;
  for (const BackendDescriptor* d : *finders) {
    auto regions = backend_ops<MemTierOps>(*d)->regions();
    if (!regions) return tl::unexpected(backend_error(*d, regions.error()));
    all.insert(all.end(), regions->begin(), regions->end());
  }
  return all;
}

}  // namespace cxlpool::hal
