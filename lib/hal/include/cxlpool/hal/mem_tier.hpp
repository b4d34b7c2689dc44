// SPDX-License-Identifier: Apache-2.0
// What MemTier backends tell the daemon about memory beyond plain NUMA
// nodes. The backends themselves are reached through the registry
// (hal::open_page_placement, hal::discover_mem_regions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cxlpool::hal {

// A CXL memory region (dax: found through libcxl): logged at start, and its
// NUMA node makes that node's tier a CXL tier whatever the firmware says.
struct MemRegionInfo {
  std::string name;         // "region0"
  std::uint64_t size_bytes = 0;
  std::string mode;         // "ram", "pmem", "mixed" or "none"
  std::size_t memdevs = 0;  // interleave targets
  std::string dax_device;   // "dax0.0"; empty when the region has none
  int numa_node = -1;       // the node it feeds as system RAM; -1 if none
};

}  // namespace cxlpool::hal
