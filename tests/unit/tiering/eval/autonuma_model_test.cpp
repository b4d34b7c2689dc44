// SPDX-License-Identifier: Apache-2.0
// The AutoNUMA-like model: scan, hint faults, the latency test, kswapd.
#include <gtest/gtest.h>

#include <map>

#include "autonuma_policy.hpp"
#include "model_fixture.hpp"
#include "tiers.hpp"

namespace cxlpool::tiering::eval {
namespace {

using testing::ModelFixture;
constexpr std::uint64_t kMs = 1'000'000;

std::map<std::string, std::uint64_t> counters(const Policy& p) {
  std::map<std::string, std::uint64_t> m;
  for (const auto& [k, v] : p.counters()) m[k] = v;
  return m;
}

TEST(AutoNumaModel, PromotesAPageTouchedSoonAfterItsScanOnly) {
  ModelFixture f(2048, 1024);  // all pages start slow
  AutoNumaPolicy numa;
  f.start(numa);
  // Before the first scan (scan delay 1 s) nothing is marked: no fault.
  f.access(500 * kMs, {3});
  EXPECT_EQ(counters(numa)["hint_faults"], 0u);

  f.advance(1000 * kMs);  // first scan: 8 MiB < 256 MiB, everything marked
  EXPECT_EQ(counters(numa)["pages_marked"], 2048u);
  f.access(1100 * kMs, {5});  // 100 ms after its scan: hot
  EXPECT_TRUE(f.tiers().is_fast(5));
  f.access(1900 * kMs, {6});  // 900 ms: still under the 1 s threshold
  EXPECT_TRUE(f.tiers().is_fast(6));
  // The scan at 2 s does not re-stamp pages still marked from the 1 s scan.
  f.access(2500 * kMs, {7});  // 1.5 s after its scan: not hot
  EXPECT_FALSE(f.tiers().is_fast(7));
  f.access(2600 * kMs, {7});  // the fault consumed the mark: no second fault
  const auto c = counters(numa);
  EXPECT_EQ(c.at("hint_faults"), 3u);
  EXPECT_EQ(c.at("promoted"), 2u);
  EXPECT_EQ(c.at("promotion_candidates"), 2u);

  // Page 7 is marked again by the next scan (3 s) and touched quickly: promoted.
  f.access(3200 * kMs, {7});
  EXPECT_TRUE(f.tiers().is_fast(7));

  std::vector<std::uint32_t> picks;
  numa.hot_pages(picks, 512, f.ctx());
  ASSERT_EQ(picks.size(), 3u);  // ranked by hint-fault latency
  EXPECT_EQ(picks[0], 5u);
  EXPECT_EQ(picks[1], 7u);
  EXPECT_EQ(picks[2], 6u);
}

TEST(AutoNumaModel, ScansScanSizePerPeriodAndSkipsTheFastTier) {
  ModelFixture f(4096, 1024);
  for (std::uint32_t p = 0; p < 1024; ++p) ASSERT_TRUE(f.tiers().place_fast(p));
  AutoNumaConfig c;
  c.scan_size_mb = 4;  // 1024 pages per scan
  AutoNumaPolicy numa(c);
  f.start(numa);
  f.advance(1000 * kMs);
  // [0, 1024) is all fast: nothing changed, charged to the virtual budget
  // only; the next range, [1024, 2048), uses up the page budget.
  EXPECT_EQ(counters(numa)["pages_marked"], 1024u);
  f.access(1100 * kMs, {100, 600, 1535, 2048, 3000});
  EXPECT_EQ(counters(numa)["hint_faults"], 1u);  // 1535
  f.advance(2000 * kMs);  // the next scan continues at 2048
  EXPECT_EQ(counters(numa)["pages_marked"], 2048u);
  f.access(2100 * kMs, {2048, 3000, 3100});  // 3100 lies past this scan's range
  EXPECT_EQ(counters(numa)["hint_faults"], 3u);
}

TEST(AutoNumaModel, AScanRangeWithAnyChangeUsesItsWholeSize) {
  ModelFixture f(4096, 1024);
  for (std::uint32_t p = 0; p < 512; ++p) ASSERT_TRUE(f.tiers().place_fast(p));
  AutoNumaConfig c;
  c.scan_size_mb = 4;
  AutoNumaPolicy numa(c);
  f.start(numa);
  f.advance(1000 * kMs);
  // [0, 1024) marked its 512 slow pages and used the whole 1024-page budget.
  EXPECT_EQ(counters(numa)["pages_marked"], 512u);
}

TEST(AutoNumaModel, FullFastTierWakesKswapdAndThePromotionFails) {
  ModelFixture f(20000, 10000);
  for (std::uint32_t p = 10000; p < 20000; ++p) {
    ASSERT_TRUE(f.tiers().place_fast(p));
    f.tiers().touch(p, p);  // LRU order: 10000 is the coldest
  }
  AutoNumaPolicy numa;
  f.start(numa);
  EXPECT_GT(numa.promo_wmark(), numa.high_wmark());
  f.advance(1000 * kMs);
  f.access(1010 * kMs, {42});
  EXPECT_FALSE(f.tiers().is_fast(42));  // failed: no free pages above the high watermark
  auto c = counters(numa);
  EXPECT_EQ(c.at("kswapd_wakeups"), 1u);
  EXPECT_GE(f.tiers().free(), numa.promo_wmark() + 1);
  EXPECT_FALSE(f.tiers().is_fast(10000));  // least recently used went first
  // Now there is room: the next quick fault promotes.
  f.access(1020 * kMs, {43});
  EXPECT_TRUE(f.tiers().is_fast(43));
}

// __setup_per_zone_wmarks() (mm/page_alloc.c): min < low < high < promo on
// every zone size, also below 1000 pages where pages x 10 / 10000 is 0.
TEST(AutoNumaModel, WatermarksAreOrderedAtEverySize) {
  for (std::uint64_t pages : {1ULL, 10ULL, 100ULL, 999ULL, 1000ULL, 4000ULL, 16384ULL, 1ULL << 20}) {
    const Watermarks w = kernel_watermarks(pages);
    EXPECT_GE(w.min, 1u) << pages;
    EXPECT_LT(w.min, w.low) << pages;
    EXPECT_LT(w.low, w.high) << pages;
    EXPECT_LT(w.high, w.promo) << pages;
  }
  const Watermarks big = kernel_watermarks(1ULL << 20);  // 4 GiB: min 1049, dist 1048
  EXPECT_EQ(big.min, 1049u);
  EXPECT_EQ(big.high, 1049u + 2 * 1048u);
}

// A full fast tier under a steady stream of hot hint faults: each failed
// migration (migrate_balanced_pgdat(), mm/migrate.c) wakes kswapd, which
// demotes in SWAP_CLUSTER_MAX batches until the promo watermark is met
// (pgdat_balanced() in tiering mode, mm/vmscan.c); the faults after it
// promote until free pages fall to high + 1 again. So promotion goes on at
// any fast-tier size, one failure per kswapd round.
void expect_steady_promotion(std::uint32_t fast_pages) {
  const std::uint32_t total = fast_pages * 4;
  ModelFixture f(total, fast_pages);
  for (std::uint32_t p = 0; p < fast_pages; ++p) {
    ASSERT_TRUE(f.tiers().place_fast(p));
    f.tiers().touch(p, p);
  }
  AutoNumaPolicy numa;
  f.start(numa);
  f.advance(1000 * kMs);  // the first scan marks every slow page
  const std::uint32_t faults = 2 * fast_pages;
  for (std::uint32_t i = 0; i < faults; ++i) f.access(1001 * kMs + i * 1000, {fast_pages + i});
  const auto c = counters(numa);
  EXPECT_EQ(c.at("promoted") + c.at("promote_failed"), faults) << fast_pages;
  // One failure per round of at least 32 freed pages above the watermark gap.
  EXPECT_LE(c.at("promote_failed"), faults / 32 + 2) << fast_pages;
  EXPECT_GE(c.at("promoted"), faults - faults / 32 - 2) << fast_pages;
  EXPECT_EQ(c.at("kswapd_wakeups"), c.at("promote_failed")) << fast_pages;
  EXPECT_LE(f.tiers().used(), fast_pages);
}

TEST(AutoNumaModel, SmallFastTierKeepsPromoting) { expect_steady_promotion(400); }
TEST(AutoNumaModel, LargeFastTierKeepsPromoting) { expect_steady_promotion(20000); }

TEST(AutoNumaModel, RateLimitCapsCandidatesPerSecond) {
  ModelFixture f(4096, 4096);
  AutoNumaConfig c;
  c.promote_rate_limit_mbps = 1;  // 256 pages per second
  c.enough_free_floor_bytes = 1ULL << 40;  // never "plenty of free memory"
  AutoNumaPolicy numa(c);
  f.start(numa);
  f.advance(1000 * kMs);
  std::vector<std::uint32_t> all;
  for (std::uint32_t p = 0; p < 1000; ++p) all.push_back(p);
  f.access(1001 * kMs, all);
  const auto m = counters(numa);
  // The window opens at the first candidate; 256 pass, the rest are limited.
  EXPECT_EQ(m.at("promoted"), 256u);
  EXPECT_EQ(m.at("rate_limited"), 1000u - 256u);
}

}  // namespace
}  // namespace cxlpool::tiering::eval
