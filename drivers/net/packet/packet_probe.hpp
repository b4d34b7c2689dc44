// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// NetPort/packet: opens (and closes) an AF_PACKET socket. Available when the
// kernel lets this process have one (CAP_NET_RAW in its network namespace);
// not present otherwise, with the kernel's reason.
hal::BackendReport probe_packet();

}  // namespace cxlpool::drivers
