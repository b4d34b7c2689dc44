// SPDX-License-Identifier: Apache-2.0
// latency_target's queue-depth search, driven with made-up latencies: a
// device whose latency grows with the depth (as a saturated one's does by
// Little's law) settles on the highest depth that meets the target.
#include <gtest/gtest.h>

#include <vector>

#include "run/depth_search.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kUs = 1000;
constexpr std::uint64_t kWindow = 1000 * kUs;

// Runs windows of 100 I/Os whose latency is `per_depth` × depth until the
// search ends; returns the depths tried.
std::vector<std::uint32_t> run(DepthSearch& s, std::uint64_t per_depth_ns) {
  std::vector<std::uint32_t> tried;
  std::uint64_t now = 0;
  s.restart(now);
  for (int w = 0; w < 100 && !s.done(); ++w) {
    tried.push_back(s.depth());
    for (int i = 0; i < 100; ++i) {
      now += kWindow / 100;
      s.record(per_depth_ns * s.depth(), now);
    }
  }
  return tried;
}

TEST(DepthSearch, FindsTheHighestDepthMeetingTheTarget) {
  // 10 us per queued request, target 500 us: depth 50 meets it, 51 not.
  DepthSearch s(500 * kUs, kWindow, 100.0, 128);
  const auto tried = run(s, 10 * kUs);
  ASSERT_TRUE(s.done());
  EXPECT_EQ(s.depth(), 50u);
  // Doubling first: 1, 2, 4, ... 64 (a miss), then bisection.
  ASSERT_GE(tried.size(), 8u);
  EXPECT_EQ(tried[0], 1u);
  EXPECT_EQ(tried[1], 2u);
  EXPECT_EQ(tried[6], 64u);
  EXPECT_LE(tried.size(), 14u);
}

TEST(DepthSearch, StopsAtIodepthWhenEverythingMeetsIt) {
  DepthSearch s(500 * kUs, kWindow, 99.9, 16);
  run(s, 1 * kUs);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.depth(), 16u);
}

TEST(DepthSearch, DepthOneMissingEndsAtOne) {
  DepthSearch s(5 * kUs, kWindow, 100.0, 64);
  const auto tried = run(s, 10 * kUs);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.depth(), 1u);
  EXPECT_EQ(tried.size(), 1u);
}

TEST(DepthSearch, PercentileCountsTheShareWithinTheTarget) {
  // 1 I/O in 100 is slow: a 99% percentile is met, 99.9% is not.
  for (double pct : {99.0, 99.9}) {
    DepthSearch s(100 * kUs, kWindow, pct, 4);
    std::uint64_t now = 0;
    s.restart(0);
    for (int w = 0; w < 10 && !s.done(); ++w) {
      for (int i = 0; i < 100; ++i) {
        now += kWindow / 100;
        s.record(i == 0 ? 1000 * kUs : 10 * kUs, now);
      }
    }
    ASSERT_TRUE(s.done()) << pct;
    EXPECT_EQ(s.depth(), pct == 99.0 ? 4u : 1u) << pct;
  }
}

}  // namespace
}  // namespace cxlpool::io
