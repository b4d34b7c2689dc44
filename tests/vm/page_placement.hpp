// SPDX-License-Identifier: Apache-2.0
// Where the pages of a mapping live, and moving them, through the raw
// mbind/move_pages system calls (tests keep libnuma's headers out).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::vmtest {

// The NUMA node of every page of [addr, addr + length), as move_pages() with
// nodes == NULL reports it: a node number, or a negative errno for a page
// that is not mapped (-ENOENT: never touched through this mapping).
Result<std::vector<int>> query_page_nodes(const void* addr, size_t length, size_t page_size);

// Moves every page of the range to `node` (MPOL_MF_MOVE_ALL when all_users,
// which needs CAP_SYS_NICE). The kernel refuses pages it cannot isolate at
// that instant (-EBUSY, -EAGAIN); those are retried a few times. Fails if any
// page did not move. Returns how many page moves had to be retried.
Result<size_t> move_range_to_node(void* addr, size_t length, size_t page_size, int node,
                                  bool all_users);

// mbind(MPOL_BIND) of the range to one node, before first touch.
Result<void> bind_range_to_node(void* addr, size_t length, int node);

// Checks that every page is on `node`; the message names the first pages
// that are not and how many there are in all.
Result<void> expect_all_on_node(const std::vector<int>& nodes, int node);

// True when /sys/devices/system/node/node<N> exists.
bool numa_node_exists(int node);

// The node's cpulist from sysfs ("" for a memory-only node).
Result<std::string> numa_node_cpulist(int node);

}  // namespace cxlpool::vmtest
