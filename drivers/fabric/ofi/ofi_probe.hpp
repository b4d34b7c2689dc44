// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// Transport/ofi: fi_getinfo(1.17) over every provider. Available with the
// distinct provider names ("libfabric 1.17; providers: tcp;ofi_rxm, shm, ...");
// not present when no provider answers (FI_ENODATA); failed on other errors.
// FI_PROVIDER in the environment filters providers, as everywhere in libfabric.
hal::BackendReport probe_ofi();

}  // namespace cxlpool::drivers
