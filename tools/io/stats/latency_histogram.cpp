// SPDX-License-Identifier: Apache-2.0
#include "latency_histogram.hpp"

#include <bit>
#include <cmath>

namespace cxlpool::io {

namespace {
constexpr std::uint64_t kSubCount = 1ull << LatencyHistogram::kSubBits;
constexpr std::uint64_t kSubMask = kSubCount - 1;

// Lower bound and width of a bucket: group 0 holds 0..kSubCount-1 exactly;
// group g >= 1 covers [2^(g+kSubBits-1), 2^(g+kSubBits)) in kSubCount steps.
std::uint64_t bucket_low(int bucket) {
  const int group = bucket >> LatencyHistogram::kSubBits;
  const std::uint64_t sub = static_cast<std::uint64_t>(bucket) & kSubMask;
  if (group == 0) return sub;
  const int shift = group - 1;
  return (kSubCount + sub) << shift;
}

std::uint64_t bucket_width(int bucket) {
  const int group = bucket >> LatencyHistogram::kSubBits;
  return group == 0 ? 1 : (1ull << (group - 1));
}
}  // namespace

int LatencyHistogram::bucket_of(std::uint64_t ns) {
  if (ns < kSubCount) return static_cast<int>(ns);
  const int msb = 63 - std::countl_zero(ns);
  const int shift = msb - kSubBits;
  return ((shift + 1) << kSubBits) + static_cast<int>((ns >> shift) & kSubMask);
}

std::uint64_t LatencyHistogram::bucket_value(int bucket) {
  // Exact buckets report themselves; wider ones their midpoint, which halves
  // the worst-case error compared with either edge.
  return bucket_low(bucket) + bucket_width(bucket) / 2;
}

void LatencyHistogram::record(std::uint64_t ns) {
  ++counts_[static_cast<std::size_t>(bucket_of(ns))];
  ++count_;
  if (ns < min_) min_ = ns;
  if (ns > max_) max_ = ns;
  const auto v = static_cast<double>(ns);
  sum_ += v;
  sum_sq_ += v * v;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  if (other.min_ < min_) min_ = other.min_;
  if (other.max_ > max_) max_ = other.max_;
  sum_ += other.sum_;
  sum_sq_ += other.sum_sq_;
}

void LatencyHistogram::clear() { *this = LatencyHistogram{}; }

double LatencyHistogram::mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

double LatencyHistogram::stddev() const {
  // Sample standard deviation (n-1), as fio reports it.
  if (count_ < 2) return 0.0;
  const double n = static_cast<double>(count_);
  const double var = (sum_sq_ - sum_ * sum_ / n) / (n - 1);
  return var > 0 ? std::sqrt(var) : 0.0;
}

std::uint64_t LatencyHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  if (p <= 0) p = 0;
  if (p > 100) p = 100;
  // The smallest value v such that at least p% of samples are <= v.
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  // The extremes are known exactly; no need to approximate them.
  if (rank >= count_) return max_;
  if (rank == 1) return min_;
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[static_cast<std::size_t>(b)];
    if (seen >= rank) {
      // Clamp to what was actually seen so p100 is the max and p0+ not below min.
      std::uint64_t v = bucket_value(b);
      if (v > max_) v = max_;
      if (v < min_) v = min_;
      return v;
    }
  }
  return max_;
}

std::vector<LatencyHistogram::Bin> LatencyHistogram::bins() const {
  std::vector<Bin> out;
  if (count_ == 0) return out;
  for (int b = bucket_of(min_); b <= bucket_of(max_); ++b) {
    const auto c = counts_[static_cast<std::size_t>(b)];
    if (c != 0) out.push_back(Bin{bucket_value(b), c});
  }
  return out;
}

}  // namespace cxlpool::io
