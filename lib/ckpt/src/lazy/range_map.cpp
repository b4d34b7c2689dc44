// SPDX-License-Identifier: Apache-2.0
#include "range_map.hpp"

#include <algorithm>
#include <string>

#include "cxlpool/ckpt/manifest.hpp"

namespace cxlpool::ckpt::lazy {

void RangeMap::insert(const LazyRange& r) {
  if (r.length == 0) return;
  erase(r.addr, r.addr + r.length);
  segments_.emplace(r.addr, Segment{r.addr + r.length, r.source_offset});
}

void RangeMap::erase(uint64_t start, uint64_t end) {
  if (start >= end) return;
  auto it = segments_.upper_bound(start);
  if (it != segments_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > start) it = prev;
  }
  while (it != segments_.end() && it->first < end) {
    uint64_t s = it->first;
    Segment seg = it->second;
    it = segments_.erase(it);
    // Keep the parts on either side of [start, end).
    if (s < start) segments_.emplace(s, Segment{start, seg.source_offset});
    if (seg.end > end) it = segments_.emplace(end, Segment{seg.end, seg.source_offset + (end - s)}).first;
  }
}

void RangeMap::move(uint64_t from, uint64_t to, uint64_t length) {
  if (length == 0 || from == to) return;
  std::vector<LazyRange> moved;
  for (const LazyRange& r : ranges()) {
    uint64_t s = std::max(r.addr, from), e = std::min(r.addr + r.length, from + length);
    if (s < e) moved.push_back({s - from + to, e - s, r.source_offset + (s - r.addr)});
  }
  erase(from, from + length);
  erase(to, to + length);
  for (const LazyRange& r : moved) insert(r);
}

RangeMap::Hit RangeMap::lookup(uint64_t addr) const {
  auto it = segments_.upper_bound(addr);
  if (it != segments_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > addr) return {true, prev->second.end, prev->second.source_offset + (addr - prev->first)};
  }
  return {false, it == segments_.end() ? UINT64_MAX : it->first, 0};
}

std::vector<LazyRange> RangeMap::ranges() const {
  std::vector<LazyRange> out;
  out.reserve(segments_.size());
  for (const auto& [start, seg] : segments_) out.push_back({start, seg.end - start, seg.source_offset});
  return out;
}

std::vector<ImageRun> image_runs(const RangeMap& map, std::span<const uint64_t> pages) {
  std::vector<uint64_t> sorted;
  sorted.reserve(pages.size());
  for (uint64_t p : pages) sorted.push_back(p & ~(kPageSize - 1));
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<ImageRun> runs;
  for (size_t i = 0; i < sorted.size();) {
    RangeMap::Hit hit = map.lookup(sorted[i]);
    size_t j = i + 1;
    if (hit.from_source) {
      while (j < sorted.size() && sorted[j] == sorted[j - 1] + kPageSize && sorted[j] < hit.end) ++j;
      runs.push_back({sorted[i], sorted[j - 1] + kPageSize, hit.source_offset});
    }
    i = j;
  }
  return runs;
}

Result<void> check_ranges(const std::vector<LazyRange>& ranges, uint64_t source_bytes) {
  std::vector<LazyRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const LazyRange& a, const LazyRange& b) { return a.addr < b.addr; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LazyRange& r = sorted[i];
    std::string where = "range " + std::to_string(r.addr) + "+" + std::to_string(r.length);
    if (r.length == 0 || (r.addr | r.length | r.source_offset) % kPageSize != 0)
      return fail(EINVAL, where + ": empty or not page aligned");
    if (r.addr + r.length < r.addr || r.source_offset > source_bytes || r.length > source_bytes - r.source_offset)
      return fail(EINVAL, where + ": beyond the image (" + std::to_string(source_bytes) + " bytes)");
    if (i > 0 && sorted[i - 1].addr + sorted[i - 1].length > r.addr) return fail(EINVAL, where + ": overlaps another");
  }
  return {};
}

}  // namespace cxlpool::ckpt::lazy
