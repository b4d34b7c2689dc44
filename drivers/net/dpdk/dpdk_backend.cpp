// SPDX-License-Identifier: Apache-2.0
// Registers the dpdk backend (NetPort: DPDK poll-mode drivers; a probe until the NetPort class exists) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "dpdk_probe.hpp"

CXLPOOL_REGISTER_BACKEND(dpdk, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kNetPort>, "dpdk", 10, &cxlpool::drivers::probe_dpdk,
                         {})
