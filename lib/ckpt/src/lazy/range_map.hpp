// SPDX-License-Identifier: Apache-2.0
// Which clone addresses of one client still come from the image, and from
// where. Addresses outside every range read as zeros: MADV_DONTNEED and
// munmap erase, mremap moves and leaves zeros behind.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "cxlpool/ckpt/lazy_pager.hpp"

namespace cxlpool::ckpt::lazy {

class RangeMap {
 public:
  struct Hit {
    bool from_source = false;    // false: the page reads as zeros
    uint64_t end = 0;            // where this answer stops holding (range end or next range start)
    uint64_t source_offset = 0;  // of `addr`, when from_source
  };

  // Overwrites whatever [r.addr, r.addr + r.length) held.
  void insert(const LazyRange& r);
  void erase(uint64_t start, uint64_t end);
  // mremap: what [from, from + length) held now lies at `to`; `from` is zeros.
  void move(uint64_t from, uint64_t to, uint64_t length);
  Hit lookup(uint64_t addr) const;

  std::vector<LazyRange> ranges() const;
  bool empty() const { return segments_.empty(); }

 private:
  struct Segment {
    uint64_t end;
    uint64_t source_offset;
  };
  std::map<uint64_t, Segment> segments_;  // by start, not overlapping
};

// The listed clone pages (any order, duplicates allowed) that come from the
// image, as runs of consecutive pages inside one range: one ioctl or iovec
// each. [addr, end) at clone addresses, from source_offset in the image.
struct ImageRun {
  uint64_t addr = 0, end = 0, source_offset = 0;
};
std::vector<ImageRun> image_runs(const RangeMap& map, std::span<const uint64_t> pages);

// EINVAL unless every range is page aligned, non-empty, inside
// [0, source_bytes) of the image and apart from the others.
Result<void> check_ranges(const std::vector<LazyRange>& ranges, uint64_t source_bytes);

}  // namespace cxlpool::ckpt::lazy
