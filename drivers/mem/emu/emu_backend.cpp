// SPDX-License-Identifier: Apache-2.0
// Registers the emu backend (MemTier: an emulated slow tier in memfd or hugetlbfs files) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "emu_probe.hpp"

CXLPOOL_REGISTER_BACKEND(emu, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kMemTier>, "emu", 30, &cxlpool::drivers::probe_emu,
                         {})
