// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// NetPort/dpdk: loads the EAL library the build was configured with (dlopen,
// never rte_eal_init) and reports its rte_version() and the huge page pool.
// Available when EAL loads (EAL can always run with --no-huge); not present
// when this CPU lacks the instruction set DPDK was built for; failed when the
// library cannot be loaded.
hal::BackendReport probe_dpdk();

}  // namespace cxlpool::drivers
