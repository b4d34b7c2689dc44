// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/net_port.hpp"

namespace cxlpool::drivers {

// NetPort/packet: one non-blocking AF_PACKET SOCK_RAW socket bound to the
// interface; batches go through recvmmsg/sendmmsg straight between the
// caller's buffers and the kernel (one copy each way, the kernel's).
// Frames this host sends out of the interface are not received back
// (PACKET_IGNORE_OUTGOING). Errors: EPERM without CAP_NET_RAW, ENODEV for
// an unknown interface.
Result<std::unique_ptr<hal::NetPort>> open_packet_net_port(const std::string& interface,
                                                           const hal::NetPortOptions& options);

}  // namespace cxlpool::drivers
