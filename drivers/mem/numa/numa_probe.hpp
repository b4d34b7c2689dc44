// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// MemTier/numa: available when the kernel has NUMA support (numa_available()),
// detail "<N> node(s), libnuma <version>"; not present otherwise.
hal::BackendReport probe_numa();

}  // namespace cxlpool::drivers
