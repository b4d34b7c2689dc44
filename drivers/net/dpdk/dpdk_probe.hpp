// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// NetPort/dpdk: available whenever DPDK is compiled in (EAL can always run
// with --no-huge); the detail names the DPDK version and the huge page pool.
// Does not initialize EAL.
hal::BackendReport probe_dpdk();

}  // namespace cxlpool::drivers
