// SPDX-License-Identifier: Apache-2.0
#include "prepared_trace.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

namespace cxlpool::tiering::eval {

std::uint64_t word_mask(std::uint64_t offset, std::uint64_t bytes) {
  if (bytes == 0) return 0;
  const std::uint64_t first = offset >> 6;
  const std::uint64_t last = std::min<std::uint64_t>(offset + bytes - 1, kPageBytes - 1) >> 6;
  const std::uint64_t span = last - first + 1;
  const std::uint64_t ones = span >= 64 ? ~0ULL : ((1ULL << span) - 1);
  return ones << first;
}

std::optional<std::uint32_t> PreparedTrace::index_of(std::uint64_t address) const {
  auto it = std::lower_bound(page_address.begin(), page_address.end(), address);
  if (it == page_address.end() || *it != address) return std::nullopt;
  return static_cast<std::uint32_t>(it - page_address.begin());
}

namespace {

// Calls f(page_number, word_mask) for every page [address, address + size) spans.
template <typename F>
void for_each_page(const TraceRecord& r, F&& f) {
  const std::uint64_t end = r.address + r.size;  // validated: no wrap
  std::uint64_t at = r.address;
  while (at < end) {
    const std::uint64_t page = at >> kPageShift;
    const std::uint64_t offset = at & (kPageBytes - 1);
    const std::uint64_t bytes = std::min(end - at, kPageBytes - offset);
    f(page, word_mask(offset, bytes));
    at += bytes;
  }
}

}  // namespace

Result<PreparedTrace> prepare_trace(std::span<const TraceRecord> records) {
  if (records.empty()) return fail(EINVAL, "trace has no records");
  std::vector<std::uint64_t> pages;
  pages.reserve(records.size());
  std::uint64_t previous = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TraceRecord& r = records[i];
    if (r.size == 0) return fail(EINVAL, "record " + std::to_string(i) + ": size 0");
    if (r.address > std::numeric_limits<std::uint64_t>::max() - r.size)
      return fail(EINVAL, "record " + std::to_string(i) + ": address + size past 2^64");
    if (r.timestamp_ns < previous)
      return fail(EINVAL, "record " + std::to_string(i) + ": timestamp goes backwards");
    previous = r.timestamp_ns;
    for_each_page(r, [&](std::uint64_t page, std::uint64_t) { pages.push_back(page); });
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  if (pages.size() > std::numeric_limits<std::uint32_t>::max())
    return fail(EINVAL, "trace touches more than 2^32 distinct pages");

  PreparedTrace out;
  out.records = records.size();
  out.start_ns = records.front().timestamp_ns;
  out.end_ns = records.back().timestamp_ns + 1;
  out.page_address.reserve(pages.size());
  for (auto p : pages) out.page_address.push_back(p << kPageShift);

  // A direct table when the address range is compact (the usual case), a
  // hash map for traces scattered over a huge address space.
  const std::uint64_t lo = pages.front();
  const std::uint64_t span = pages.back() - lo + 1;
  std::vector<std::uint32_t> table;
  std::unordered_map<std::uint64_t, std::uint32_t> map;
  const bool direct = span <= std::max<std::uint64_t>(pages.size() * 8, 1u << 20);
  if (direct) {
    table.assign(span, 0);
    for (std::size_t i = 0; i < pages.size(); ++i) table[pages[i] - lo] = static_cast<std::uint32_t>(i);
  } else {
    map.reserve(pages.size());
    for (std::size_t i = 0; i < pages.size(); ++i) map.emplace(pages[i], static_cast<std::uint32_t>(i));
  }
  pages.clear();
  pages.shrink_to_fit();

  out.accesses.reserve(records.size());
  for (const TraceRecord& r : records) {
    for_each_page(r, [&](std::uint64_t page, std::uint64_t mask) {
      const std::uint32_t index = direct ? table[page - lo] : map.at(page);
      out.accesses.push_back(Access{r.timestamp_ns, mask, index, r.is_write});
    });
  }
  return out;
}

}  // namespace cxlpool::tiering::eval
