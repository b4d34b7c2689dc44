// SPDX-License-Identifier: Apache-2.0
// Driver SDK for SharedMemory backends (drivers/shm/*).
#pragma once

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "cxlpool/hal/shared_memory.hpp"

namespace cxlpool::hal {

struct SharedMemoryOps {
  static constexpr BackendClass kClass = BackendClass::kSharedMemory;
  // Opens and maps what `spec` describes. ENODEV when the spec is not one
  // for this backend (file: no path; memfd: a path; devdax: a path that is
  // not a DAX device): "auto" then tries the next backend. Every other
  // error is about the target itself and ends the search.
  Result<SharedMemory> (*open)(const SharedMemorySpec& spec);
};

}  // namespace cxlpool::hal
