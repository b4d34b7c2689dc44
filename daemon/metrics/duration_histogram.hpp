// SPDX-License-Identifier: Apache-2.0
// A Prometheus-style duration histogram: cumulative counts over fixed bucket
// bounds from 1 us to 10 s (a control request, a KV op and a region's
// migration all land in that range), plus the count and the sum. The event
// loop records and renders, so there is no locking; record() is a few
// compares and adds.
#pragma once

#include <array>
#include <cstdint>

namespace cxlpool::daemon {

class DurationHistogram {
 public:
  // Upper bounds in nanoseconds, ascending; +Inf is implicit.
  static constexpr std::array<std::uint64_t, 22> kBoundsNs = {
      1'000,       2'500,       5'000,         10'000,        25'000,        50'000,
      100'000,     250'000,     500'000,       1'000'000,     2'500'000,     5'000'000,
      10'000'000,  25'000'000,  50'000'000,    100'000'000,   250'000'000,   500'000'000,
      1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

  void record(std::uint64_t ns);

  std::uint64_t count() const { return count_; }
  std::uint64_t sum_ns() const { return sum_ns_; }
  // Observations <= kBoundsNs[i] (cumulative, as Prometheus' `le` buckets).
  std::uint64_t cumulative(std::size_t i) const;

 private:
  std::array<std::uint64_t, kBoundsNs.size()> in_bucket_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ns_ = 0;
};

}  // namespace cxlpool::daemon
