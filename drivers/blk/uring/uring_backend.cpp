// SPDX-License-Identifier: Apache-2.0
// Registers the uring backend (BlockEngine: io_uring through liburing; first choice) with lib/hal's registry.
#include "cxlpool/hal/driver/block_driver.hpp"
#include "uring_block_device.hpp"
#include "uring_probe.hpp"

CXLPOOL_REGISTER_BACKEND(uring, cxlpool::hal::BlockEngineOps, "uring", 10, &cxlpool::drivers::probe_uring,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::drivers::open_uring_block_device, &cxlpool::drivers::uring_refused}))
