// SPDX-License-Identifier: Apache-2.0
// Block sizes (bs, bsrange, bssplit shares) and the rate limiter.
#include <gtest/gtest.h>

#include <map>

#include "run/block_size_picker.hpp"
#include "run/rate_limiter.hpp"

namespace cxlpool::io {
namespace {

TEST(BlockSizePicker, BssplitFollowsItsShares) {
  JobSpec job;
  job.bssplit[kReadDir] = {{4096, 10}, {65536, 50}, {16384, 0}, {8192, 0}};  // the 0s split 40%
  auto p = BlockSizePicker::make(job, kReadDir, 512);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->min(), 4096u);
  EXPECT_EQ(p->max(), 65536u);
  Rng rng(1);
  std::map<std::uint32_t, int> count;
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) ++count[p->pick(rng)];
  EXPECT_NEAR(count[4096] / double(draws), 0.10, 0.01);
  EXPECT_NEAR(count[65536] / double(draws), 0.50, 0.01);
  EXPECT_NEAR(count[16384] / double(draws), 0.20, 0.01);
  EXPECT_NEAR(count[8192] / double(draws), 0.20, 0.01);
}

TEST(BlockSizePicker, BssplitOver100PercentIsRefused) {
  JobSpec job;
  job.bssplit[kWriteDir] = {{4096, 60}, {8192, 50}};
  EXPECT_FALSE(BlockSizePicker::make(job, kWriteDir, 1));
  job.bssplit[kWriteDir] = {{4096, 60}, {8192, 30}};
  EXPECT_FALSE(BlockSizePicker::make(job, kWriteDir, 1));  // no 0 share to take the rest
}

TEST(BlockSizePicker, BsrangeStaysInRangeInStepsOfItsMinimum) {
  JobSpec job;
  job.bsrange_min[kReadDir] = 4096;
  job.bsrange_max[kReadDir] = 16384;
  auto p = BlockSizePicker::make(job, kReadDir, 512);
  ASSERT_TRUE(p);
  Rng rng(2);
  std::map<std::uint32_t, int> count;
  for (int i = 0; i < 40000; ++i) {
    const std::uint32_t b = p->pick(rng);
    ASSERT_GE(b, 4096u);
    ASSERT_LE(b, 16384u);
    ASSERT_EQ(b % 4096, 0u);
    ++count[b];
  }
  EXPECT_EQ(count.size(), 4u);
  for (auto& [size, c] : count) EXPECT_NEAR(c, 10000, 600) << size;
}

TEST(BlockSizePicker, MisalignedSizeIsRefusedWithItsDirection) {
  JobSpec job;
  job.bs[kWriteDir] = 1000;
  auto p = BlockSizePicker::make(job, kWriteDir, 512);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("write"), std::string::npos) << p.error().message;
  EXPECT_TRUE(BlockSizePicker::make(job, kWriteDir, 1));
}

// Drives the limiter with a simulated clock: issue whenever it allows.
std::uint64_t ios_in(RateLimiter& r, std::uint64_t duration_ns, std::uint32_t bytes) {
  std::uint64_t now = 0, ios = 0;
  while (now < duration_ns) {
    const std::uint64_t w = r.wait_ns(now, bytes);
    if (w != 0) {
      now += w;
      continue;
    }
    r.consume(now, bytes);
    ++ios;
  }
  return ios;
}

TEST(RateLimiter, BytesPerSecondHolds) {
  RateLimiter r(10 << 20, 0);  // 10 MiB/s
  const std::uint64_t ios = ios_in(r, 2'000'000'000ull, 4096);
  EXPECT_NEAR(double(ios) * 4096 / 2.0, 10 << 20, 0.01 * (10 << 20));
}

TEST(RateLimiter, IopsHoldsAndTheStricterLimitWins) {
  RateLimiter iops(0, 1000);
  EXPECT_NEAR(double(ios_in(iops, 1'000'000'000ull, 4096)), 1000, 5);
  RateLimiter both(1 << 20, 1000);  // 1 MiB/s of 4 KiB = 256 IOPS < 1000
  EXPECT_NEAR(double(ios_in(both, 1'000'000'000ull, 4096)), 256, 3);
}

TEST(RateLimiter, IdleTimeDoesNotBuildABurst) {
  RateLimiter r(0, 1000, 1'000'000);  // 1 ms of credit
  r.consume(0, 1);
  // After a long pause only one millisecond's worth of credit (one I/O at
  // 1000 IOPS) goes at once, besides the I/O that is due anyway.
  std::uint64_t now = 5'000'000'000ull, burst = 0;
  while (r.wait_ns(now, 1) == 0) {
    r.consume(now, 1);
    ++burst;
  }
  EXPECT_LE(burst, 3u);
  RateLimiter unlimited;
  EXPECT_FALSE(unlimited.limited());
  EXPECT_EQ(unlimited.wait_ns(0, 1), 0u);
}

}  // namespace
}  // namespace cxlpool::io
