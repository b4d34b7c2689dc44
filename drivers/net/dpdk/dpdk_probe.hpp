// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// NetPort/dpdk: loads cxlpool-dpdk-port.so (and with it DPDK's libraries;
// never rte_eal_init) and reports rte_version() and the huge page pool.
// Available when it loads (EAL runs with --no-huge); not present when this
// CPU lacks the instruction set DPDK was built for; failed when the module
// cannot be loaded.
hal::BackendReport probe_dpdk();

}  // namespace cxlpool::drivers
