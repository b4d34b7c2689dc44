// SPDX-License-Identifier: Apache-2.0
#include "stats/latency_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace cxlpool::io {
namespace {

// The stated bound: exact below 2^kSubBits, otherwise within 1/2^(kSubBits+1).
double bound() { return 1.0 / static_cast<double>(1u << (LatencyHistogram::kSubBits + 1)); }

TEST(LatencyHistogram, EveryBucketValueIsWithinTheBoundOfItsMembers) {
  std::mt19937_64 rng(7);
  for (int shift = 0; shift < 64; ++shift) {
    for (int i = 0; i < 200; ++i) {
      const std::uint64_t v = shift == 0 ? rng() % 256 : (rng() >> (63 - shift)) | (1ull << shift);
      const int b = LatencyHistogram::bucket_of(v);
      ASSERT_GE(b, 0);
      ASSERT_LT(b, LatencyHistogram::kBuckets);
      const auto rep = LatencyHistogram::bucket_value(b);
      if (v < 256) {
        EXPECT_EQ(rep, v);
      } else {
        const double err = std::fabs(static_cast<double>(rep) - static_cast<double>(v)) / static_cast<double>(v);
        EXPECT_LE(err, bound()) << "value " << v << " reported as " << rep;
      }
    }
  }
  EXPECT_EQ(LatencyHistogram::bucket_of(~0ull), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, BucketsAreMonotonic) {
  int last = -1;
  for (std::uint64_t v = 0; v < 200'000; v += 7) {
    const int b = LatencyHistogram::bucket_of(v);
    EXPECT_GE(b, last);
    last = b;
  }
}

TEST(LatencyHistogram, PercentilesMatchExactOnesWithinTheBound) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(11.0, 1.2);  // ~60us median, long tail
  LatencyHistogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 100'000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
    const auto exact = values[std::max<std::size_t>(rank, 1) - 1];
    const auto got = h.percentile(p);
    const double err = std::fabs(static_cast<double>(got) - static_cast<double>(exact)) / static_cast<double>(exact);
    EXPECT_LE(err, bound()) << "p" << p << " exact " << exact << " got " << got;
  }
  EXPECT_EQ(h.percentile(100), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.count(), values.size());
}

TEST(LatencyHistogram, MeanStddevAndMerge) {
  LatencyHistogram a, b;
  for (std::uint64_t v : {100, 200, 300}) a.record(v);
  for (std::uint64_t v : {400, 500}) b.record(v);
  EXPECT_DOUBLE_EQ(a.mean(), 200.0);
  EXPECT_NEAR(a.stddev(), 100.0, 1e-9);  // sample stddev, as fio
  a.merge(b);
  EXPECT_EQ(a.count(), 5u);
  EXPECT_DOUBLE_EQ(a.mean(), 300.0);
  EXPECT_NEAR(a.stddev(), std::sqrt(25000.0), 1e-9);
  EXPECT_EQ(a.min(), 100u);
  EXPECT_EQ(a.max(), 500u);
  a.clear();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.min(), 0u);
  EXPECT_EQ(a.percentile(50), 0u);
  EXPECT_TRUE(a.bins().empty());
}

TEST(LatencyHistogram, BinsSumToCountInAscendingOrder) {
  LatencyHistogram h;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) h.record(rng() % 10'000'000);
  std::uint64_t sum = 0, last = 0;
  for (const auto& bin : h.bins()) {
    EXPECT_GT(bin.count, 0u);
    EXPECT_GE(bin.value_ns, last);
    last = bin.value_ns;
    sum += bin.count;
  }
  EXPECT_EQ(sum, h.count());
}

}  // namespace
}  // namespace cxlpool::io
