// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// BlockEngine/posix: synchronous pread/pwrite; always available.
hal::BackendReport probe_posix();

}  // namespace cxlpool::drivers
