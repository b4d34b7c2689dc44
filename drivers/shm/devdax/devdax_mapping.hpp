// SPDX-License-Identifier: Apache-2.0
// SharedMemory/devdax: map a device-DAX character device.
#pragma once

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"
#include "cxlpool/hal/shared_memory.hpp"

namespace cxlpool::drivers {

// Maps spec.path ("/dev/daxX.Y") from
// offset 0, spec.size bytes rounded up to the device's alignment (all of it
// when 0). Device facts come from sysfs below `root`. Errors as listed for
// "devdax" at hal::open_shared_memory.
Result<hal::SharedMemory> open_devdax(const hal::SharedMemorySpec& spec, const SysfsRoot& root);

// open_devdax on the real sysfs: the backend's operation.
Result<hal::SharedMemory> open_devdax_here(const hal::SharedMemorySpec& spec);

}  // namespace cxlpool::drivers
