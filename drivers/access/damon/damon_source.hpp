// SPDX-License-Identifier: Apache-2.0
// AccessSource "damon": physical-address access monitoring through DAMON's
// sysfs interface (Documentation/admin-guide/mm/damon/usage.rst).
//
// Own mode sets up a kdamond of its own: one context with operations
// "paddr", one target whose regions are the configured physical ranges, and
// one "stat" scheme that matches every region; then turns it on. Each
// collect() asks the kdamond to refresh the scheme's tried regions and
// reports them. The destructor turns the kdamond off and removes what it
// created.
//
// Attach mode only reads an existing kdamond's tried regions; its one write
// is the "update_schemes_tried_regions" command that refreshes them.
//
// Units: PageAccess::count is DAMON's nr_accesses of the region, i.e. in how
// many of the sampling checks of the last aggregation interval the region was
// found accessed (0 .. aggr_us / sample_us), the same for every page of the
// region. It is not a number of memory accesses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"

namespace cxlpool::drivers {

struct DamonSourceConfig {
  // Where sysfs is mounted. Tests pass a fixture copy; never the real "/sys"
  // on a host whose DAMON belongs to someone else.
  std::string sysfs_root = "/sys";
  // Own mode: physical [start, end) ranges to monitor (the tiers' nodes),
  // 4 KiB aligned, non-empty, not overlapping. Ignored in attach mode.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t sample_us = 5'000;
  uint64_t aggr_us = 100'000;
  uint64_t update_us = 1'000'000;
  uint32_t min_regions = 10;  // DAMON needs >= 3
  uint32_t max_regions = 1'000;
  // Attach to an existing, running kdamond instead of creating one.
  bool attach = false;
  // Own mode: the index our kdamond gets (nr_kdamonds must be 0 before).
  // Attach mode: the kdamond to read.
  uint32_t kdamond_index = 0;
  // Attach mode: which context and which scheme of that kdamond to read.
  uint32_t context_index = 0;
  uint32_t scheme_index = 0;
};

// Checks a configuration without touching sysfs. EINVAL with the reason.
Result<void> validate_damon_config(const DamonSourceConfig& config);

// Sets up (own mode) or attaches to (attach mode) a kdamond and returns the
// source. Errors:
//   EINVAL  bad configuration, or a malformed value read from sysfs
//   ENOENT  no DAMON sysfs interface below config.sysfs_root, or a file or
//           directory the kernel should have created is missing
//   EBUSY   own mode: kdamonds exist already (writing nr_kdamonds would
//           rebuild them all; use attach mode)
//   ENOTSUP own mode: "paddr" is not in the context's avail_operations;
//           attach mode: the context does not use "paddr"
//   ESRCH   attach mode: the kdamond is not running
//   the errno of a failed sysfs read or write otherwise.
// In own mode everything created is released again when set-up fails.
Result<std::unique_ptr<hal::AccessSource>> make_damon_source(const DamonSourceConfig& config);

}  // namespace cxlpool::drivers
