// SPDX-License-Identifier: Apache-2.0
// Registers the aio backend (BlockEngine: Linux AIO through libaio; only when named) with lib/hal's registry.
#include "cxlpool/hal/driver/block_driver.hpp"
#include "aio_block_device.hpp"
#include "aio_probe.hpp"

CXLPOOL_REGISTER_BACKEND(aio, cxlpool::hal::BlockEngineOps, "aio", cxlpool::hal::kExplicitOnly, &cxlpool::drivers::probe_aio,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::drivers::open_aio_block_device, nullptr}))
