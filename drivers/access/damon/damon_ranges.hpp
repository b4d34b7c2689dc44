// SPDX-License-Identifier: Apache-2.0
// The physical address ranges a NUMA node's memory occupies, for
// DamonSourceConfig::ranges: the node's online memory blocks, merged.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::drivers {

// Reads <sysfs>/devices/system/node/node<N>/memory* and, for each block,
// <sysfs>/devices/system/memory/memory<K>/{state,phys_index} with
// block_size_bytes. Offline blocks are left out; adjacent blocks merge.
// Blocks may include holes the firmware reserved; DAMON's paddr operations
// skip pages that are not online RAM. Errors: ENOENT (no such node, or no
// online memory on it), EINVAL (malformed sysfs values).
Result<std::vector<std::pair<uint64_t, uint64_t>>> node_physical_ranges(const std::string& sysfs_root,
                                                                        int node);

}  // namespace cxlpool::drivers
