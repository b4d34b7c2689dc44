// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// Transport/verbs: available with the RDMA device names when
// ibv_get_device_list finds any; not present ("no RDMA devices") otherwise.
hal::BackendReport probe_verbs();

}  // namespace cxlpool::drivers
