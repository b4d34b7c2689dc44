// SPDX-License-Identifier: Apache-2.0
// Registers the dpdk backend (NetPort: a DPDK ethdev through net_af_packet or net_af_xdp, EAL without huge pages)
// with lib/hal's registry. Chosen only by name: EAL takes over process-wide state (threads, its log, a once-per-process
// initialisation) that "auto" must not impose on a program.
#include "cxlpool/hal/driver/net_port_driver.hpp"
#include "dpdk_net_port.hpp"
#include "dpdk_probe.hpp"

CXLPOOL_REGISTER_BACKEND(dpdk, cxlpool::hal::NetPortOps, "dpdk", cxlpool::hal::kExplicitOnly, &cxlpool::drivers::probe_dpdk,
                         (cxlpool::hal::NetPortOps{&cxlpool::drivers::open_dpdk_net_port}))
