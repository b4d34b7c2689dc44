// SPDX-License-Identifier: Apache-2.0
// Registers the devdax backend (SharedMemory: device-DAX character devices) with lib/hal's registry.
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/driver/shared_memory_driver.hpp"
#include "devdax_devices.hpp"
#include "devdax_mapping.hpp"

namespace cxlpool::drivers {
namespace {

hal::BackendReport probe_devdax() {
  hal::BackendReport report{"SharedMemory", "devdax", hal::BackendState::kNotPresent, ""};
  auto devices = find_devdax_devices(SysfsRoot("/"));
  if (!devices) {
    report.state = hal::BackendState::kFailed;
    report.detail = devices.error().message;
    return report;
  }
  std::string mappable;
  std::size_t others = 0;
  for (const auto& dev : *devices) {
    if (!dev.mappable()) {
      ++others;
      continue;
    }
    mappable += (mappable.empty() ? "" : ", ") + dev.name + " " + format_size(dev.size_bytes) + " align " +
                format_size(dev.align);
  }
  if (mappable.empty()) {
    report.detail = others == 0 ? "no device-DAX devices"
                                : std::to_string(others) + " DAX device(s), none bound to device_dax";
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = mappable;
  return report;
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(devdax, cxlpool::hal::SharedMemoryOps, "devdax", 10, &cxlpool::drivers::probe_devdax,
                         (cxlpool::hal::SharedMemoryOps{&cxlpool::drivers::open_devdax_here}))
