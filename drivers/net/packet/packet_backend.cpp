// SPDX-License-Identifier: Apache-2.0
// Registers the packet backend (NetPort: AF_PACKET raw sockets; runs wherever CAP_NET_RAW is held) with lib/hal's
// registry.
#include "cxlpool/hal/driver/net_port_driver.hpp"
#include "packet_net_port.hpp"
#include "packet_probe.hpp"

CXLPOOL_REGISTER_BACKEND(packet, cxlpool::hal::NetPortOps, "packet", 30, &cxlpool::drivers::probe_packet,
                         (cxlpool::hal::NetPortOps{&cxlpool::drivers::open_packet_net_port}))
