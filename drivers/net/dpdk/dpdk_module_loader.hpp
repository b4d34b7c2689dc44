// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "cxlpool/common/result.hpp"
#include "dpdk_module_abi.h"

namespace cxlpool::drivers {

// The build's DPDK: "DPDK 22.11.x".
std::string dpdk_build_text();

// cxlpool-dpdk-port.so, loaded once per process and never unloaded (EAL
// registers state in its constructors and does not support being
// unloaded). Looked for at $CXLPOOL_DPDK_MODULE, then where it is
// installed, then in the build tree. ENOTSUP when this CPU lacks the
// instruction set DPDK was built for (loading it would be SIGILL), when
// the module is found nowhere, or when it has another ABI version.
Result<const CxlpoolDpdkModule*> load_dpdk_module();

}  // namespace cxlpool::drivers
