// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "dpdk_module_abi.h"

namespace cxlpool::drivers {

// DPDK's EAL initialises once per process and cannot initialise again after
// rte_eal_cleanup. Every dpdk port of a process shares one EAL, started by
// the first port with dpdk_eal_arguments() and cleaned up when the last
// port closes; a port opened after that is refused (EALREADY) with the
// reason. The arguments are the same for every port (the devices are
// hot-plugged afterwards), so there is never a second set to reconcile.

// The EAL arguments: --no-huge --no-pci --no-shconf --no-telemetry, a
// file prefix of this process (removed again at cleanup: nothing is left
// under /var/run), and one lcore allowed on every CPU this thread may run
// on (EAL would otherwise pin the calling thread to one core).
// --in-memory would be the same here, but DPDK 22.11 refuses it together
// with --no-huge (which implies legacy memory).
std::vector<std::string> dpdk_eal_arguments();

// Loads the module and starts EAL (first user) or shares it; every
// successful acquire is paired with one release. The module is returned
// for the caller's port operations.
Result<const CxlpoolDpdkModule*> acquire_dpdk_eal();
// The last release runs rte_eal_cleanup and removes the runtime directory.
void release_dpdk_eal();

// What DPDK logged (it logs into the driver, not to stderr): a mark to
// pass to dpdk_log_since, which returns the last line logged after it
// ("" when none), for error messages.
std::size_t dpdk_log_mark();
std::string dpdk_log_since(std::size_t mark);

}  // namespace cxlpool::drivers
