// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// NetPort/afxdp: whether this kernel lets the process open an AF_XDP
// socket. Available when it does; not present otherwise.
hal::BackendReport probe_afxdp();

}  // namespace cxlpool::drivers
