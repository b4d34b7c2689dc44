// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// BlockEngine/uring: available when an 8-entry ring can be set up (detail:
// liburing version, supported opcodes, feature bits); not present when the
// kernel refuses io_uring (ENOSYS, EPERM: kernel.io_uring_disabled or a
// seccomp filter); failed on any other set-up error.
hal::BackendReport probe_uring();

}  // namespace cxlpool::drivers
