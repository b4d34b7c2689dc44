// SPDX-License-Identifier: Apache-2.0
// The kernel's pool of default-size huge pages (hugetlbfs, MFD_HUGETLB), read
// from /proc/meminfo and /proc/sys/vm/nr_hugepages below an injectable root.
#pragma once

#include <cstdint>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"

namespace cxlpool::hal {

struct HugePagePool {
  uint64_t page_size = 0;   // Hugepagesize in bytes (default huge page size)
  uint64_t configured = 0;  // /proc/sys/vm/nr_hugepages
  uint64_t total = 0;       // HugePages_Total (configured + surplus)
  uint64_t free = 0;        // HugePages_Free (includes reserved pages)
  uint64_t reserved = 0;    // HugePages_Rsvd: promised to a mapping, not yet faulted
  uint64_t surplus = 0;     // HugePages_Surp

  // Pages a new reservation can still get.
  uint64_t available() const { return free > reserved ? free - reserved : 0; }
};

// ENOTSUP when /proc/meminfo has no Hugepagesize (kernel without hugetlb);
// EINVAL naming the file for malformed content.
Result<HugePagePool> read_huge_page_pool(const SysfsRoot& root);

}  // namespace cxlpool::hal
