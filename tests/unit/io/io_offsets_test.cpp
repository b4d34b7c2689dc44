// SPDX-License-Identifier: Apache-2.0
// Offsets: a random-map pass touches every block once; norandommap repeats;
// sequential wraps; zipf/pareto/normal have their shapes; scattering is a
// bijection.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "run/block_distribution.hpp"
#include "run/offset_generator.hpp"
#include "run/random_map.hpp"

namespace cxlpool::io {
namespace {

JobSpec random_job() {
  JobSpec j;
  j.rw = RwMode::kRandRead;
  return j;
}

TEST(RandomMap, EveryBlockOnceThenFull) {
  for (std::uint64_t blocks : {1ull, 63ull, 64ull, 65ull, 1000ull, 4097ull}) {
    RandomMap map(blocks);
    Rng rng(7);
    std::vector<int> seen(blocks, 0);
    for (std::uint64_t i = 0; i < blocks; ++i) {
      ASSERT_FALSE(map.full());
      const std::uint64_t b = map.next_free(rng.below(blocks));
      ASSERT_LT(b, blocks);
      ASSERT_EQ(map.mark_run(b, 1), 1u);
      ++seen[b];
    }
    EXPECT_TRUE(map.full()) << blocks;
    for (std::uint64_t b = 0; b < blocks; ++b) EXPECT_EQ(seen[b], 1) << "block " << b << " of " << blocks;
    map.clear();
    EXPECT_EQ(map.used(), 0u);
  }
}

TEST(RandomMap, RunStopsAtUsedBlockAndEnd) {
  RandomMap map(10);
  EXPECT_EQ(map.mark_run(5, 1), 1u);
  EXPECT_EQ(map.mark_run(2, 8), 3u);  // 2,3,4 then 5 is used
  EXPECT_EQ(map.mark_run(8, 8), 2u);  // 8,9 then the end
  EXPECT_EQ(map.next_free(2), 6u);
  EXPECT_EQ(map.next_free(9), 0u);    // wraps
}

TEST(OffsetGenerator, RandomMapPassCoversEveryBlockOncePerPass) {
  const JobSpec job = random_job();
  const std::uint64_t blocks = 777;
  OffsetGenerator gen(job, 8192, blocks * 4096, 4096, 42);
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<int> seen(blocks, 0);
    for (std::uint64_t i = 0; i < blocks; ++i) {
      const auto p = gen.next(kReadDir, 4096);
      ASSERT_EQ(p.bytes, 4096u);
      ASSERT_GE(p.offset, 8192u);
      ASSERT_EQ((p.offset - 8192) % 4096, 0u);
      ++seen[(p.offset - 8192) / 4096];
    }
    for (std::uint64_t b = 0; b < blocks; ++b) ASSERT_EQ(seen[b], 1) << "pass " << pass << " block " << b;
  }
  EXPECT_EQ(gen.passes(), 2u);
}

TEST(OffsetGenerator, NoRandomMapRepeatsBlocksWithinAPass) {
  JobSpec job = random_job();
  job.norandommap = true;
  const std::uint64_t blocks = 1000;
  OffsetGenerator gen(job, 0, blocks * 512, 512, 3);
  std::set<std::uint64_t> distinct;
  for (std::uint64_t i = 0; i < blocks; ++i) distinct.insert(gen.next(kReadDir, 512).offset);
  // Uniform draws with replacement reach about 1 - 1/e of the blocks.
  EXPECT_LT(distinct.size(), 700u);
  EXPECT_GT(distinct.size(), 560u);
}

TEST(OffsetGenerator, SequentialWrapsAndClampsAtTheEnd) {
  JobSpec job;
  job.rw = RwMode::kReadWrite;
  OffsetGenerator gen(job, 4096, 10 * 4096, 4096, 1);
  EXPECT_EQ(gen.next(kReadDir, 8192).offset, 4096u);
  EXPECT_EQ(gen.next(kReadDir, 8192).offset, 4096u + 8192);
  // Writes keep their own position.
  EXPECT_EQ(gen.next(kWriteDir, 4096).offset, 4096u);
  for (int i = 0; i < 3; ++i) gen.next(kReadDir, 8192);
  const auto wrapped = gen.next(kReadDir, 8192);
  EXPECT_EQ(wrapped.offset, 4096u);
  EXPECT_EQ(gen.passes(), 1u);
  OffsetGenerator odd(job, 0, 3 * 4096, 4096, 1);
  odd.next(kReadDir, 8192);
  const auto tail = odd.next(kReadDir, 8192);
  EXPECT_EQ(tail.offset, 8192u);
  EXPECT_EQ(tail.bytes, 4096u);  // shortened at the end of the region
}

TEST(BlockDistribution, ScatterIsABijection) {
  for (std::uint64_t n : {1ull, 2ull, 97ull, 1000ull, 4096ull}) {
    BlockDistribution d(Distribution::kZipf, 1.2, n, 11);
    std::vector<bool> hit(n, false);
    for (std::uint64_t r = 0; r < n; ++r) {
      const std::uint64_t b = d.scatter(r);
      ASSERT_LT(b, n);
      ASSERT_FALSE(hit[b]) << "rank " << r << " of " << n;
      hit[b] = true;
    }
  }
}

TEST(BlockDistribution, ZipfHottestRanksMatchTheory) {
  const std::uint64_t n = 1000;
  const double theta = 1.2;
  BlockDistribution d(Distribution::kZipf, theta, n, 5);
  const int draws = 400000;
  std::vector<int> count(n, 0);
  for (int i = 0; i < draws; ++i) {
    const std::uint64_t r = d.next_rank();
    ASSERT_LT(r, n);
    ++count[r];
  }
  const double zeta = BlockDistribution::zeta(n, theta);
  // Ranks 0 and 1 are exact in Gray's method: p(i) = (i+1)^-theta / zeta.
  EXPECT_NEAR(count[0] / double(draws), 1.0 / zeta, 0.01);
  EXPECT_NEAR(count[1] / double(draws), std::pow(2.0, -theta) / zeta, 0.01);
  // Skew: the hottest 10% of blocks take most accesses, a uniform draw 10%.
  long top = 0;
  for (std::uint64_t r = 0; r < n / 10; ++r) top += count[r];
  EXPECT_GT(top / double(draws), 0.75);
}

TEST(BlockDistribution, ParetoHBlocksTakeOneMinusHOfAccesses) {
  const std::uint64_t n = 10000;
  for (double h : {0.2, 0.3}) {
    BlockDistribution d(Distribution::kPareto, h, n, 9);
    const int draws = 200000;
    int in_first = 0;
    for (int i = 0; i < draws; ++i)
      if (d.next_rank() < static_cast<std::uint64_t>(h * n)) ++in_first;
    EXPECT_NEAR(in_first / double(draws), 1.0 - h, 0.01) << "h=" << h;
  }
}

TEST(BlockDistribution, NormalIsCentredWithTheGivenDeviation) {
  const std::uint64_t n = 100000;
  BlockDistribution d(Distribution::kNormal, 10.0, n, 13);  // sigma = 10% of the range
  const int draws = 200000;
  double sum = 0, sum_sq = 0;
  int within_one_sigma = 0;
  for (int i = 0; i < draws; ++i) {
    const double x = static_cast<double>(d.next_rank());
    sum += x;
    sum_sq += x * x;
    if (std::abs(x - n / 2.0) <= 0.1 * n) ++within_one_sigma;
  }
  const double mean = sum / draws;
  const double sd = std::sqrt(sum_sq / draws - mean * mean);
  EXPECT_NEAR(mean, n / 2.0, 0.01 * n);
  EXPECT_NEAR(sd, 0.1 * n, 0.005 * n);
  EXPECT_NEAR(within_one_sigma / double(draws), 0.6827, 0.01);
}

TEST(BlockDistribution, UniformIsFlat) {
  const std::uint64_t n = 10;
  BlockDistribution d(Distribution::kRandom, 0, n, 1);
  std::vector<int> count(n, 0);
  for (int i = 0; i < 100000; ++i) ++count[d.next()];
  for (int c : count) EXPECT_NEAR(c, 10000, 500);
}

}  // namespace
}  // namespace cxlpool::io
