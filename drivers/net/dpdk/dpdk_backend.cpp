// SPDX-License-Identifier: Apache-2.0
// Registers the dpdk backend (NetPort: DPDK poll-mode drivers; a probe only: no open operation yet) with lib/hal's registry.
#include "cxlpool/hal/driver/net_port_driver.hpp"
#include "dpdk_probe.hpp"

CXLPOOL_REGISTER_BACKEND(dpdk, cxlpool::hal::NetPortOps, "dpdk", 10, &cxlpool::drivers::probe_dpdk,
                         (cxlpool::hal::NetPortOps{nullptr}))
