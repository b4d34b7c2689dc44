// SPDX-License-Identifier: Apache-2.0
// Host memory topology read from sysfs (through an injectable root so tests use
// fixture trees): NUMA nodes, their CPUs, sizes, free memory and distances, and
// the kernel's memory tiers when /sys/devices/virtual/memory_tiering exists.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"

namespace cxlpool::hal {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;       // empty: a memory-only (far, CXL-like) node
  uint64_t total_bytes = 0;    // MemTotal from node<N>/meminfo
  uint64_t free_bytes = 0;     // node<N>/meminfo's free and reclaimable (meminfo_available)
  std::vector<int> distances;  // node<N>/distance, indexed by position in Topology::nodes
  int memory_tier = -1;        // kernel memory tier id (memory_tier<N>), -1 if unknown

  bool cpu_less() const { return cpus.empty(); }
};

struct KernelMemoryTier {
  int id = 0;               // N of memory_tier<N> (lower = faster)
  std::vector<int> nodes;   // from nodelist
};

struct Topology {
  std::vector<NumaNode> nodes;  // sorted by id; only nodes with memory ("has_memory")
  std::vector<KernelMemoryTier> memory_tiers;  // empty when the kernel has none
  bool numa_present = false;    // /sys/devices/system/node exists
};

// Reads /sys/devices/system/node and /sys/devices/virtual/memory_tiering below
// `root`. A host without the node directory yields one synthetic node 0 sized
// from /proc/meminfo (numa_present = false). Malformed files are errors that
// name the file.
Result<Topology> discover_topology(const SysfsRoot& root);

// Refreshes free_bytes of every node (cheap; called before reporting tiers).
Result<void> refresh_free_memory(const SysfsRoot& root, Topology& topology);

}  // namespace cxlpool::hal
