// SPDX-License-Identifier: Apache-2.0
#include "dpdk_probe.hpp"

#include <string>

#include "cxlpool/common/sysfs_root.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/huge_pages.hpp"
#include "dpdk_module_loader.hpp"

namespace cxlpool::drivers {
namespace {

// The engine runs EAL with --no-huge; huge pages are only reported.
std::string huge_page_text() {
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (!pool) return "huge pages unknown (" + pool.error().message + "); EAL runs with --no-huge";
  if (pool->total == 0) return "no huge pages configured; EAL runs with --no-huge";
  return std::to_string(pool->free) + " of " + std::to_string(pool->total) + " huge pages of " +
         format_size(pool->page_size) + " free; EAL runs with --no-huge";
}

}  // namespace

hal::BackendReport probe_dpdk() {
  hal::BackendReport report{"NetPort", "dpdk", hal::BackendState::kNotPresent, ""};
  auto module = load_dpdk_module();
  if (!module) {
    // A CPU without DPDK's baseline is "not here"; a module that will not
    // load is a broken installation.
    report.state = module.error().message.find("this CPU lacks") == 0 ? hal::BackendState::kNotPresent
                                                                      : hal::BackendState::kFailed;
    report.detail = module.error().message;
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = std::string((*module)->version()) + ", vdev net_af_packet (CXLPOOL_DPDK_PMD=af_xdp: net_af_xdp); " +
                  huge_page_text();
  return report;
}

}  // namespace cxlpool::drivers
