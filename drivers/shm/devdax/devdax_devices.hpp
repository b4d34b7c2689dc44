// SPDX-License-Identifier: Apache-2.0
// Device-DAX devices as sysfs shows them (/sys/bus/dax/devices/daxX.Y),
// read below an injectable root so fixture trees can stand in for hardware.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"

namespace cxlpool::drivers {

// What a mapping of a DAX device is aligned to when sysfs does not say
// (kernels before the per-device `align` attribute default to 2 MiB).
inline constexpr std::uint64_t kDefaultDaxAlign = 2u << 20;

struct DevDaxDevice {
  std::string name;          // "dax0.0"
  std::string device_path;   // "/dev/dax0.0"
  std::uint64_t size_bytes = 0;
  std::uint64_t align = kDefaultDaxAlign;  // mappings start and end on this
  std::string driver;        // "device_dax" (mappable), "kmem" (system RAM), "" (unbound)
  int target_node = -1;

  // Only a device the device_dax driver holds has a character device to map.
  bool mappable() const { return driver == "device_dax"; }
};

// Every DAX device, sorted by name; empty (not an error) without any.
// EINVAL naming the file for a device whose size or align is unreadable.
Result<std::vector<DevDaxDevice>> find_devdax_devices(const SysfsRoot& root);

// "dax0.0" for "/dev/dax0.0"; nullopt for a path that does not name a DAX
// device.
std::optional<std::string> devdax_name_of_path(const std::string& path);

}  // namespace cxlpool::drivers
