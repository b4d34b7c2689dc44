// SPDX-License-Identifier: Apache-2.0
// Runs every backend probe compiled into this build and reports the ones
// that were not compiled with the configure-time reason.
#pragma once

#include <vector>

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::daemon {

std::vector<hal::BackendReport> probe_backends();

}  // namespace cxlpool::daemon
