// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/net_port.hpp"

namespace cxlpool::drivers {

// NetPort/afxdp: an AF_XDP socket on queue 0 of the interface, in copy mode
// with the XDP program attached generically (skb mode), so it works on any
// interface the kernel has, veth included; libxdp loads its default
// program, which hands every frame of the queue to the socket. The
// interface then belongs to the backend: the host's own stack no longer
// receives on that queue (as with a DPDK port). Frames go through a UMEM of
// the port's own (one copy each way between it and the caller's buffers,
// the same as the packet backend's kernel copy). Errors: EPERM without
// CAP_NET_ADMIN/CAP_NET_RAW, ENODEV for an unknown interface, EBUSY when
// another XDP program or socket holds the queue.
Result<std::unique_ptr<hal::NetPort>> open_afxdp_net_port(const std::string& interface,
                                                          const hal::NetPortOptions& options);

}  // namespace cxlpool::drivers
