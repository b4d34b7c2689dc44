// SPDX-License-Identifier: Apache-2.0
// Registers the emu backend (MemTier: an emulated slow tier in memfd or
// hugetlbfs files) with lib/hal's registry. It neither places pages nor
// finds regions; the daemon creates its region files directly
// (region_memory.hpp), as emu is always built.
#include "cxlpool/hal/driver/mem_tier_driver.hpp"
#include "emu_probe.hpp"

CXLPOOL_REGISTER_BACKEND(emu, cxlpool::hal::MemTierOps, "emu", 30, &cxlpool::drivers::probe_emu,
                         (cxlpool::hal::MemTierOps{nullptr, nullptr}))
