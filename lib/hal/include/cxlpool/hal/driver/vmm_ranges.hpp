// SPDX-License-Identifier: Apache-2.0
// Driver SDK for GpuVmm backends: the checks map() makes against the ranges
// a backend keeps as start address -> length maps (reserved ranges, mapped
// pieces). Ranges in one map never overlap.
#pragma once

#include <cstdint>
#include <map>

namespace cxlpool::hal {

// Whether [va, va + bytes) lies inside one range of `ranges`.
template <typename Length>
bool vmm_range_inside_one(const std::map<std::uint64_t, Length>& ranges, std::uint64_t va,
                          std::uint64_t bytes) {
  auto it = ranges.upper_bound(va);
  if (it == ranges.begin()) return false;
  --it;
  return va >= it->first && va + bytes <= it->first + it->second;
}

// Whether [va, va + bytes) shares an address with any range of `ranges`.
template <typename Length>
bool vmm_range_overlaps_any(const std::map<std::uint64_t, Length>& ranges, std::uint64_t va,
                            std::uint64_t bytes) {
  auto it = ranges.lower_bound(va);
  if (it != ranges.end() && it->first < va + bytes) return true;
  if (it == ranges.begin()) return false;
  --it;
  return it->first + it->second > va;
}

}  // namespace cxlpool::hal
