// SPDX-License-Identifier: Apache-2.0
// Registers the posix backend (BlockEngine: pread/pwrite; runs everywhere) with lib/hal's registry.
#include "cxlpool/hal/driver/block_driver.hpp"
#include "posix_block_device.hpp"
#include "posix_probe.hpp"

CXLPOOL_REGISTER_BACKEND(posix, cxlpool::hal::BlockEngineOps, "posix", 20, &cxlpool::drivers::probe_posix,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::drivers::open_posix_block_device, nullptr}))
