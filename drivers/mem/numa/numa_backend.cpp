// SPDX-License-Identifier: Apache-2.0
// Registers the numa backend (MemTier: NUMA nodes through libnuma; CPU-less nodes are CXL) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "numa_probe.hpp"

CXLPOOL_REGISTER_BACKEND(numa, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kMemTier>, "numa", 10, &cxlpool::drivers::probe_numa,
                         {})
