// SPDX-License-Identifier: Apache-2.0
#include "dax_probe.hpp"

#include <string>

#include "cxl_regions.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_cxl() {
  hal::BackendReport report{"MemTier", "dax", hal::BackendState::kNotPresent, ""};
  auto cxl = discover_cxl();
  if (!cxl) {
    report.state = hal::BackendState::kFailed;
    report.detail = cxl.error().message;
    return report;
  }
  auto dax = discover_dax_devices();
  if (!dax) {
    report.state = hal::BackendState::kFailed;
    report.detail = dax.error().message;
    return report;
  }
  const std::string dax_text = std::to_string(dax->size()) + " DAX device(s)";
  if (cxl->memdevs.empty() && dax->empty()) {
    report.detail = "no CXL memdevs, no DAX devices";
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = std::to_string(cxl->buses) + " CXL bus(es), " +
                  std::to_string(cxl->memdevs.size()) + " memdev(s), " +
                  std::to_string(cxl->regions.size()) + " region(s), " + dax_text;
  return report;
}

}  // namespace cxlpool::drivers
