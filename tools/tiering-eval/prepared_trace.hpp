// SPDX-License-Identifier: Apache-2.0
// A trace turned into what the simulator needs: every access as (time, dense
// page index, touched 64-byte words of that page). Dense indices follow the
// address order, so neighbouring indices are neighbouring pages (DAMON's
// regions and AutoNUMA's scan window walk this order).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/trace_record.hpp"

namespace cxlpool::tiering::eval {

inline constexpr std::uint64_t kPageShift = 12;
inline constexpr std::uint64_t kPageBytes = 1ULL << kPageShift;
inline constexpr std::uint64_t kNever = ~0ULL;

struct Access {
  std::uint64_t time_ns = 0;
  std::uint64_t words = 0;  // bit w: bytes [w*64, w*64+64) of the page
  std::uint32_t page = 0;   // dense page index
  bool is_write = false;
};

struct PreparedTrace {
  std::vector<Access> accesses;             // time order; a record spanning pages gives one per page
  std::vector<std::uint64_t> page_address;  // dense index -> page address, ascending
  std::uint64_t start_ns = 0;               // first timestamp
  std::uint64_t end_ns = 0;                 // last timestamp + 1
  std::uint64_t records = 0;

  std::size_t pages() const { return page_address.size(); }
  std::uint64_t duration_ns() const { return end_ns - start_ns; }
  // Dense index of the page starting at `address`; nullopt if the trace never touches it.
  std::optional<std::uint32_t> index_of(std::uint64_t address) const;
};

// EINVAL: empty trace, a record of size 0, timestamps going backwards, or
// more distinct pages than a 32-bit index holds.
Result<PreparedTrace> prepare_trace(std::span<const TraceRecord> records);

// Word mask of [offset, offset + bytes) inside one page (offset < 4096).
std::uint64_t word_mask(std::uint64_t offset, std::uint64_t bytes);

}  // namespace cxlpool::tiering::eval
