// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/net_port.hpp"

namespace cxlpool::drivers {

// NetPort/dpdk: a DPDK ethdev on the interface through a virtual device,
// net_af_packet (a TPACKET_V2 ring; default) or, with CXLPOOL_DPDK_PMD=af_xdp,
// net_af_xdp (an AF_XDP socket on queue 0, which takes the queue from the
// host's stack as the afxdp backend does). EAL runs in this process without
// huge pages, PCI or shared files, shared by every dpdk port of the process
// (dpdk_eal.hpp: once per process). Frames are copied between the caller's
// buffers and mbufs of the port's mempool (the PMD copies between mbufs
// and its ring). Address filters, promiscuous mode and link state go
// through an AF_PACKET socket of the driver's own, which also serves as
// poll_fd(): it is woken by every frame the interface receives (for
// net_af_xdp it never is: the XDP program takes frames before packet
// sockets see them, and the caller falls back to its timed polls).
// Errors: EPERM without CAP_NET_RAW, ENODEV for an unknown interface,
// EINVAL for an MTU whose frames do not fit an mbuf, ENOTSUP when DPDK
// cannot be loaded on this CPU or the module is missing, EALREADY after
// the process's EAL was cleaned up; EAL and PMD failures keep DPDK's errno
// and add its last log line.
Result<std::unique_ptr<hal::NetPort>> open_dpdk_net_port(const std::string& interface,
                                                         const hal::NetPortOptions& options);

}  // namespace cxlpool::drivers
