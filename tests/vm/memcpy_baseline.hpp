// SPDX-License-Identifier: Apache-2.0
// The memcpy bandwidth of this machine, the yardstick for page migration.
#pragma once

#include <cstddef>

#include "cxlpool/common/result.hpp"

namespace cxlpool::vmtest {

// Copies `bytes` between two private buffers (both touched first, so no page
// faults are timed) `repeats` times and returns the best rate in MiB/s. With
// node >= 0 both buffers are bound to that NUMA node.
Result<double> memcpy_mib_per_s(size_t bytes, int repeats, int node = -1);

}  // namespace cxlpool::vmtest
