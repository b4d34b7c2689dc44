// SPDX-License-Identifier: Apache-2.0
// Registers the afxdp backend (NetPort: AF_XDP sockets in copy mode through libxdp) with lib/hal's registry.
// Chosen only by name: it takes the interface's receive queue from the host's own stack, which "auto"
// must never do to an interface the host may also use.
#include "afxdp_net_port.hpp"
#include "afxdp_probe.hpp"
#include "cxlpool/hal/driver/net_port_driver.hpp"

CXLPOOL_REGISTER_BACKEND(afxdp, cxlpool::hal::NetPortOps, "afxdp", cxlpool::hal::kExplicitOnly, &cxlpool::drivers::probe_afxdp,
                         (cxlpool::hal::NetPortOps{&cxlpool::drivers::open_afxdp_net_port}))
