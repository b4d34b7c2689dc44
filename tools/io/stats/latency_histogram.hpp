// SPDX-License-Identifier: Apache-2.0
// Latency histogram with bounded relative error: log-linear buckets, 2^kSubBits
// linear sub-buckets per power of two. Values below 2^kSubBits are exact; a
// larger value is reported as its bucket's midpoint, within 1/2^(kSubBits+1)
// (0.2% for 8 bits) of what was recorded, and percentiles are clamped to the
// recorded min/max. record() is O(1) and allocation-free; merging is
// bucket-wise addition.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace cxlpool::io {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 8;
  static constexpr int kGroups = 64 - kSubBits + 1;
  static constexpr int kBuckets = kGroups << kSubBits;

  void record(std::uint64_t ns);
  void merge(const LatencyHistogram& other);
  void clear();

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  std::uint64_t max() const { return max_; }
  double mean() const;
  double stddev() const;
  // The value at percentile p (0 < p <= 100), as the bucket's midpoint.
  std::uint64_t percentile(double p) const;

  // Non-empty buckets as (representative value in ns, count), ascending, for
  // json+ "bins" and histogram logs.
  struct Bin {
    std::uint64_t value_ns;
    std::uint64_t count;
  };
  std::vector<Bin> bins() const;

  static int bucket_of(std::uint64_t ns);
  static std::uint64_t bucket_value(int bucket);  // midpoint

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = ~0ull;
  std::uint64_t max_ = 0;
  double sum_ = 0;
  double sum_sq_ = 0;
};

}  // namespace cxlpool::io
