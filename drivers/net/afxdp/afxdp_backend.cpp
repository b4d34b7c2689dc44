// SPDX-License-Identifier: Apache-2.0
// Registers the afxdp backend (NetPort: AF_XDP sockets; a probe only: no open operation yet) with lib/hal's registry.
#include "afxdp_probe.hpp"
#include "cxlpool/hal/driver/net_port_driver.hpp"

CXLPOOL_REGISTER_BACKEND(afxdp, cxlpool::hal::NetPortOps, "afxdp", 20, &cxlpool::drivers::probe_afxdp,
                         (cxlpool::hal::NetPortOps{nullptr}))
