// SPDX-License-Identifier: Apache-2.0
// The DAMON-like model: region sampling, adaptive split/merge, age, schemes.
#include <gtest/gtest.h>

#include "damon_policy.hpp"
#include "model_fixture.hpp"

namespace cxlpool::tiering::eval {
namespace {

using testing::ModelFixture;
constexpr std::uint64_t kMs = 1'000'000;

void expect_partition(const std::vector<DamonPolicy::Region>& regions, std::uint32_t pages) {
  ASSERT_FALSE(regions.empty());
  EXPECT_EQ(regions.front().start, 0u);
  EXPECT_EQ(regions.back().end, pages);
  for (std::size_t i = 0; i + 1 < regions.size(); ++i) {
    EXPECT_EQ(regions[i].end, regions[i + 1].start);
    EXPECT_LT(regions[i].start, regions[i].end);
  }
}

TEST(DamonModel, StartsWithMinRegionsAndKeepsAPartition) {
  ModelFixture f(1000, 250);
  DamonPolicy damon;
  f.start(damon);
  ASSERT_EQ(damon.regions().size(), 10u);
  EXPECT_EQ(damon.regions()[3].start, 300u);
  EXPECT_EQ(damon.max_nr_accesses(), 20u);
  f.advance(1000 * kMs);
  expect_partition(damon.regions(), 1000);
}

TEST(DamonModel, IdleRegionsMergeBackAndAge) {
  ModelFixture f(1000, 250);
  DamonPolicy damon;
  f.start(damon);
  // Nothing is ever accessed: every aggregation merges the split pieces back
  // (same nr_accesses, up to 1000 / 10 pages), then splits again; ages grow.
  f.advance(2000 * kMs);
  EXPECT_LE(damon.regions().size(), 30u);
  for (const auto& r : damon.regions()) {
    EXPECT_EQ(r.nr_accesses, 0u);
    EXPECT_LE(r.size(), 100u);
    EXPECT_GE(r.age, 15u);  // 20 aggregations, all without change
  }
  expect_partition(damon.regions(), 1000);
  std::vector<std::uint32_t> picks;
  damon.hot_pages(picks, 512, f.ctx());
  EXPECT_TRUE(picks.empty());  // nothing reaches the migrate_hot pattern
}

TEST(DamonModel, RegionsAdaptToAHotBlock) {
  ModelFixture f(1000, 250);
  f.tiers().set_frozen(true);
  DamonPolicy damon;
  f.start(damon);
  std::vector<std::uint32_t> block;
  for (std::uint32_t p = 300; p < 400; ++p) block.push_back(p);
  for (std::uint64_t t = 1; t <= 3000; ++t) f.access(t * kMs, block);  // every page, every ms
  f.advance(3000 * kMs);
  expect_partition(damon.regions(), 1000);
  EXPECT_LE(damon.regions().size(), 1000u);
  EXPECT_GT(damon.regions().size(), 10u);  // splits happened

  // Regions inside the block saw every sample; regions outside none.
  for (const auto& r : damon.regions()) {
    if (r.start >= 300 && r.end <= 400) {
      EXPECT_EQ(r.last_nr_accesses, 20u) << r.start << "-" << r.end;
    }
    if (r.end <= 300 || r.start >= 400) {
      EXPECT_EQ(r.last_nr_accesses, 0u) << r.start << "-" << r.end;
    }
  }
  // What DAMON calls hot: the block, at region granularity.
  std::vector<std::uint32_t> picks;
  damon.hot_pages(picks, 512, f.ctx());
  std::size_t inside = 0;
  for (auto p : picks) inside += (p >= 300 && p < 400) ? 1 : 0;
  EXPECT_GE(inside, 90u);
  EXPECT_GE(static_cast<double>(inside) / static_cast<double>(picks.size()), 0.7);
}

TEST(DamonModel, MaxRegionsBoundsSplitting) {
  ModelFixture f(4096, 1024);
  DamonConfig c;
  c.max_nr_regions = 40;
  DamonPolicy damon(c);
  f.start(damon);
  std::vector<std::uint32_t> every_16th;
  for (std::uint32_t p = 0; p < 4096; p += 16) every_16th.push_back(p);
  for (std::uint64_t t = 1; t <= 2000; t += 2) {
    f.access(t * kMs, every_16th);
    EXPECT_LE(damon.regions().size(), 40u * 3 / 2);
  }
  expect_partition(damon.regions(), 4096);
}

TEST(DamonModel, MigrateHotPromotesYoungPagesOfHotRegionsWithinQuota) {
  ModelFixture f(1000, 100);  // the fast tier starts empty
  DamonConfig c;
  c.quota_bytes = 30 * kPageBytes;  // 30 pages per second
  DamonPolicy damon(c);
  f.start(damon);
  std::vector<std::uint32_t> block;
  for (std::uint32_t p = 100; p < 140; ++p) block.push_back(p);
  for (std::uint64_t t = 1; t <= 2500; ++t) f.access(t * kMs, block);
  // Applied at 1 s and 2 s, 30 pages each: the whole block, nothing else
  // (the young filter keeps never-accessed neighbours in the same regions out).
  EXPECT_EQ(f.tiers().promotions(), 40u);
  for (auto p : f.tiers().fast_list()) EXPECT_TRUE(p >= 100 && p < 140) << p;
}

TEST(DamonModel, QuotaGoalsExchangeAtTheMarginOfAFullFastTier) {
  ModelFixture f(1000, 100);
  // The fast tier starts full of pages that are never accessed.
  for (std::uint32_t p = 900; p < 1000; ++p) ASSERT_TRUE(f.tiers().place_fast(p));
  DamonPolicy damon;
  f.start(damon);
  std::vector<std::uint32_t> block;
  for (std::uint32_t p = 100; p < 140; ++p) block.push_back(p);
  for (std::uint64_t t = 1; t <= 2500; ++t) f.access(t * kMs, block);
  // Each application: migrate_cold frees one page (free >= 0.5% met), then
  // migrate_hot fills it (used >= 99.7% met). Two applications in 2.5 s.
  EXPECT_EQ(f.tiers().demotions(), 2u);
  EXPECT_EQ(f.tiers().promotions(), 2u);
  std::size_t hot_fast = 0;
  for (auto p : block) hot_fast += f.tiers().is_fast(p) ? 1 : 0;
  EXPECT_EQ(hot_fast, 2u);
}

TEST(DamonModel, HotScoreFollowsFrequencyAndAge) {
  DamonPolicy damon;
  DamonPolicy::Region hot{0, 10, 20, 20, 50, 0};
  DamonPolicy::Region warm{0, 10, 5, 5, 50, 0};
  DamonPolicy::Region young_cold{0, 10, 0, 0, 1, 0};
  DamonPolicy::Region old_cold{0, 10, 0, 0, 600, 0};
  EXPECT_GT(damon.hot_score(hot), damon.hot_score(warm));
  EXPECT_GT(damon.hot_score(warm), damon.hot_score(young_cold));
  EXPECT_GT(damon.hot_score(young_cold), damon.hot_score(old_cold));
  EXPECT_LE(damon.hot_score(hot), 99);
  EXPECT_GE(damon.hot_score(old_cold), 0);
}

}  // namespace
}  // namespace cxlpool::tiering::eval
