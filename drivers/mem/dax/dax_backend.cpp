// SPDX-License-Identifier: Apache-2.0
// Registers the dax backend (MemTier: CXL regions and device-DAX through libcxl/libdaxctl) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "dax_probe.hpp"

CXLPOOL_REGISTER_BACKEND(dax, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kMemTier>, "dax", 20, &cxlpool::drivers::probe_cxl,
                         {})
