// SPDX-License-Identifier: Apache-2.0
// Registers the mmap backend (BlockEngine: memcpy through a file mapping; only when named) with lib/hal's registry.
#include "cxlpool/hal/driver/block_driver.hpp"
#include "mmap_block_device.hpp"
#include "mmap_probe.hpp"

CXLPOOL_REGISTER_BACKEND(mmap, cxlpool::hal::BlockEngineOps, "mmap", cxlpool::hal::kExplicitOnly, &cxlpool::drivers::probe_mmap,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::drivers::open_mmap_block_device, nullptr}))
