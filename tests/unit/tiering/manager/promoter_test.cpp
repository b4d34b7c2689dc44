// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "cxlpool/tiering/manager/hotness_table.hpp"
#include "cxlpool/tiering/manager/page_id.hpp"
#include "cxlpool/tiering/manager/promoter.hpp"
#include "cxlpool/tiering/manager/token_bucket.hpp"
#include "fake_placement.hpp"

namespace cxlpool::tiering::manager {
namespace {

using testing::FakePlacement;
using testing::trace_page;

constexpr std::uint64_t kMs = 1'000'000;

struct Rig {
  explicit Rig(std::uint64_t capacity, std::uint64_t rate = 1ULL << 30) : placement(capacity), bucket(rate) {
    // Round numbers for the expectations below.
    config.high_watermark = 0.95;
    config.low_watermark = 0.90;
  }

  // Fast pages first..first+n, each with hotness `score` (0: never observed).
  void fill_fast(std::uint64_t first, std::uint64_t n, std::uint64_t score) {
    for (std::uint64_t p = first; p < first + n; ++p) {
      ASSERT_TRUE(placement.add_fast(trace_page(p)));
      if (score != 0) hotness.add(page_id(trace_page(p)), score, 0);
    }
  }
  // Slow-tier nominations first..first+n, hottest first, with hotness `score`.
  void nominate_slow(std::uint64_t first, std::uint64_t n, std::uint64_t score,
                     PageClass cls = PageClass::kDense) {
    for (std::uint64_t p = first; p < first + n; ++p) {
      Nomination nom;
      nom.page = trace_page(p);
      nom.count = score;
      nom.page_class = cls;
      nom.location = placement.locate(nom.page);
      nominations.push_back(nom);
      hotness.add(page_id(nom.page), score, 0);
    }
  }
  PromoterResult plan(std::uint64_t batch = 512, std::uint32_t epoch = 0, double swap_min = 0) {
    return plan_migrations({nominations, placement.fast_usage(), batch, epoch, swap_min}, config, placement, hotness,
                           bucket);
  }

  M5Config config;
  FakePlacement placement;
  HotnessTable hotness;
  TokenBucket bucket;
  std::vector<Nomination> nominations;
};

std::vector<std::uint64_t> numbers(const std::vector<PageKey>& pages) {
  std::vector<std::uint64_t> out;
  for (const PageKey& p : pages) out.push_back(p.address >> 12);
  return out;
}

std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t n) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = first; p < first + n; ++p) out.push_back(p);
  return out;
}

TEST(Promoter, PromotesHottestFirstWhileThereIsRoom) {
  Rig r(100);
  r.fill_fast(0, 80, 50);
  r.nominate_slow(1000, 10, 10);
  const PromoterResult res = r.plan();
  EXPECT_EQ(numbers(res.plan.promote), range(1000, 10));
  EXPECT_TRUE(res.plan.demote.empty());
  EXPECT_EQ(res.plan.deferred_by_rate_limit, 0u);
  EXPECT_EQ(r.placement.fast_pages_calls(), 0u) << "no victims needed";
}

TEST(Promoter, PastTheHighWatermarkSwapsOutTheColdestOnlyToMakeRoom) {
  Rig r(100);
  r.fill_fast(0, 10, 0);  // never observed: the coldest
  for (std::uint64_t p = 10; p < 80; ++p) r.fill_fast(p, 1, p);
  r.nominate_slow(1000, 30, 1000);
  const PromoterResult res = r.plan();
  EXPECT_EQ(numbers(res.plan.promote), range(1000, 30));
  // 80 + 30 > 95: one swap per promotion past the high watermark, coldest first.
  EXPECT_EQ(numbers(res.plan.demote), range(0, 15));
  EXPECT_EQ(res.pressure_demotions, 0u);
  std::vector<PageKey> promoted, demoted;
  r.placement.apply(res.plan, promoted, demoted);
  EXPECT_EQ(promoted.size(), 30u);
  EXPECT_EQ(r.placement.used(), 95u);
}

TEST(Promoter, DoesNotSwapAPageForAColderOne) {
  Rig r(100);
  r.fill_fast(0, 90, 500);
  r.nominate_slow(1000, 30, 10);  // colder than everything on the fast tier
  PromoterResult res = r.plan();
  // Only the room below the high watermark is used.
  EXPECT_EQ(numbers(res.plan.promote), range(1000, 5));
  EXPECT_TRUE(res.plan.demote.empty());

  // Hotter candidates do displace them.
  Rig hot(100);
  hot.fill_fast(0, 90, 5);
  hot.nominate_slow(1000, 30, 100);
  res = hot.plan();
  EXPECT_EQ(res.plan.promote.size(), 30u);
  EXPECT_EQ(res.plan.demote.size(), 25u);  // 5 fit below the high watermark
}

TEST(Promoter, NoPingPongBetweenEquallyHotPages) {
  // A full fast tier of pages as hot as the candidates: no swap, in either
  // direction, however often it is asked.
  Rig r(100);
  r.fill_fast(0, 95, 40);
  r.nominate_slow(1000, 20, 40);
  for (int i = 0; i < 5; ++i) {
    const PromoterResult res = r.plan();
    EXPECT_TRUE(res.plan.promote.empty());
    EXPECT_TRUE(res.plan.demote.empty());
  }
  // Below the gap (kSwapGap) it still does not swap: 1.5x is not clear.
  Rig warmer(100);
  warmer.fill_fast(0, 95, 40);
  warmer.nominate_slow(1000, 20, 60);
  EXPECT_TRUE(warmer.plan().plan.demote.empty());
}

TEST(Promoter, SwapsNeedTheSwapBarFreeRoomDoesNot) {
  Rig r(100);
  r.fill_fast(0, 90, 0);  // unknown fast pages
  r.nominate_slow(1000, 20, 10);
  // Bar 50: the 5 pages of room below the high watermark are filled, nothing
  // is swapped.
  PromoterResult res = r.plan(512, 0, 50);
  EXPECT_EQ(res.plan.promote.size(), 5u);
  EXPECT_TRUE(res.plan.demote.empty());
  // Bar 5: the candidates are worth a swap.
  res = r.plan(512, 0, 5);
  EXPECT_EQ(res.plan.promote.size(), 20u);
  EXPECT_EQ(res.plan.demote.size(), 15u);
}

TEST(Promoter, PressureAloneDemotesEvenWarmPages) {
  Rig r(100);
  r.fill_fast(0, 99, 500);
  const PromoterResult res = r.plan();
  EXPECT_TRUE(res.plan.promote.empty());
  EXPECT_EQ(res.plan.demote.size(), 9u);  // 99 -> 90
  EXPECT_EQ(res.pressure_demotions, 9u);
}

TEST(Promoter, NeverDemotesNominatedOrPromotedPages) {
  Rig r(100);
  r.fill_fast(0, 95, 0);  // all unknown: all equally cold
  // Pages 0..19 are in this epoch's nominations (on the fast tier).
  for (std::uint64_t p = 0; p < 20; ++p) {
    Nomination n;
    n.page = trace_page(p);
    n.count = 3;
    n.location = TierLocation::kFast;
    r.nominations.push_back(n);
  }
  r.nominate_slow(1000, 10, 1000);
  const PromoterResult res = r.plan();
  EXPECT_EQ(res.plan.promote.size(), 10u);
  const std::vector<std::uint64_t> up = numbers(res.plan.promote);
  const std::set<std::uint64_t> promoted(up.begin(), up.end());
  ASSERT_EQ(res.plan.demote.size(), 10u);  // 95 + 10 - 95
  for (const std::uint64_t p : numbers(res.plan.demote)) {
    EXPECT_GE(p, 20u) << "nominated page demoted";
    EXPECT_EQ(promoted.count(p), 0u) << "promoted page demoted";
  }
}

TEST(Promoter, BatchSizeCapsPromotions) {
  Rig r(10'000);
  r.nominate_slow(1000, 300, 10);
  EXPECT_EQ(r.plan(64).plan.promote.size(), 64u);
  EXPECT_EQ(r.plan(512).plan.promote.size(), 300u);
}

TEST(Promoter, SparsePagesRankByDiscountedBenefit) {
  Rig r(1000);
  r.nominate_slow(1000, 5, 10, PageClass::kSparse);  // benefit 5
  r.nominate_slow(2000, 5, 9, PageClass::kDense);    // 9
  r.nominate_slow(3000, 5, 8, PageClass::kUnknown);  // 8
  std::vector<std::uint64_t> up = numbers(r.plan().plan.promote);
  ASSERT_EQ(up.size(), 15u) << "hot sparse pages still move";
  for (std::size_t i = 0; i < 10; ++i) EXPECT_GE(up[i], 2000u) << "dense and unknown first";
  for (std::size_t i = 10; i < 15; ++i) EXPECT_LT(up[i], 2000u);
  // Full credit with promote_sparse, and in HWT mode (guideline 4).
  r.config.promote_sparse = true;
  EXPECT_LT(numbers(r.plan().plan.promote)[0], 2000u);
  r.config.promote_sparse = false;
  r.config.nominator = NominatorMode::kHwt;
  EXPECT_LT(numbers(r.plan().plan.promote)[0], 2000u);
}

TEST(Promoter, HotSparsePagesDisplaceColderDensePages) {
  Rig r(100);
  r.fill_fast(0, 95, 10);  // dense fast pages, score 10
  r.nominate_slow(1000, 10, 100, PageClass::kSparse);  // benefit 50 > 2 x 10
  PromoterResult res = r.plan();
  EXPECT_EQ(res.plan.promote.size(), 10u);
  EXPECT_EQ(res.plan.demote.size(), 10u);
  // Sparse pages only 3x hotter: discounted to 1.5x, not a clear gap.
  Rig close(100);
  close.fill_fast(0, 95, 10);
  close.nominate_slow(1000, 10, 30, PageClass::kSparse);
  res = close.plan();
  EXPECT_TRUE(res.plan.promote.empty());
  EXPECT_TRUE(res.plan.demote.empty());
}

TEST(Promoter, OnlySlowTierCandidates) {
  Rig r(1000);
  r.fill_fast(0, 5, 0);
  for (std::uint64_t p = 0; p < 5; ++p) {
    Nomination n;
    n.page = trace_page(p);
    n.location = TierLocation::kFast;
    r.nominations.push_back(n);
    n.page = trace_page(500 + p);
    n.location = TierLocation::kUnknown;
    r.nominations.push_back(n);
  }
  EXPECT_TRUE(r.plan().plan.promote.empty());
}

TEST(Promoter, ZeroRateMeansNoMigration) {
  Rig r(100, 0);
  r.fill_fast(0, 100, 0);
  r.nominate_slow(1000, 10, 10);
  const PromoterResult res = r.plan();
  EXPECT_TRUE(res.plan.promote.empty());
  EXPECT_TRUE(res.plan.demote.empty());
  EXPECT_FALSE(res.promotions_deferred);
}

TEST(Promoter, NoFastCapacityNoPromotion) {
  Rig r(0);
  r.nominate_slow(1000, 10, 10);
  EXPECT_TRUE(r.plan().plan.promote.empty());
}

TEST(Promoter, RateLimitHoldsOverManyEpochs) {
  constexpr std::uint64_t kRate = 1ULL << 20;  // 256 pages/s
  Rig r(1'000'000, kRate);
  r.config.rate_limit_bytes_per_s = kRate;
  std::uint64_t now = 0;
  r.bucket.refill(now);
  std::uint64_t moved = 0;
  std::uint64_t next_page = 1'000'000;
  int deferred_epochs = 0;
  for (int epoch = 1; epoch <= 30; ++epoch) {
    now += 100 * kMs;
    r.bucket.refill(now);
    r.nominations.clear();
    r.nominate_slow(next_page, 400, 50);
    next_page += 400;
    const PromoterResult res = r.plan(1 << 20);
    std::vector<PageKey> promoted, demoted;
    r.placement.apply(res.plan, promoted, demoted);
    moved += promoted.size() + demoted.size();
    if (res.promotions_deferred) ++deferred_epochs;
    EXPECT_EQ(res.plan.deferred_by_rate_limit, 400 - res.plan.promote.size());
    // Never more than the full bucket plus what the elapsed time earned.
    const double elapsed_s = static_cast<double>(now) / 1e9;
    EXPECT_LE(static_cast<double>(moved * kPageBytes), static_cast<double>(kRate) * (1 + elapsed_s)) << epoch;
    // And the budget is used, not wasted: at most one epoch's worth (plus
    // the part of a page the bucket holds back) behind.
    EXPECT_GE(static_cast<double>(moved * kPageBytes),
              static_cast<double>(kRate) * (1 + elapsed_s - 0.1) - static_cast<double>(kPageBytes))
        << epoch;
  }
  EXPECT_EQ(deferred_epochs, 30);
}

TEST(Promoter, DemotionsShareTheBudget) {
  // 4 pages of budget, 5 pages of room below the high watermark: the budget,
  // not the room, is what stops promotions; going past the room would cost
  // a demotion per promotion, which the budget cannot pay either.
  Rig r(100, 4 * kPageBytes);
  r.config.low_watermark = 0.9;
  r.fill_fast(0, 90, 0);
  r.nominate_slow(1000, 50, 100);
  const PromoterResult res = r.plan();
  EXPECT_LE(res.plan.promote.size() + res.plan.demote.size(), 4u);
  EXPECT_EQ(res.plan.promote.size(), 4u);  // room for 5 below high: no demotion needed
  EXPECT_TRUE(res.promotions_deferred);
  EXPECT_EQ(r.bucket.tokens(), 0u);
}

TEST(TokenBucket, RefillsByElapsedTimeUpToOneSecond) {
  TokenBucket b(1000);
  EXPECT_EQ(b.tokens(), 1000u);
  b.refill(5 * kMs);  // starts the clock
  EXPECT_EQ(b.take(600), 600u);
  EXPECT_EQ(b.take(600), 400u);
  EXPECT_EQ(b.tokens(), 0u);
  b.refill(5 * kMs + 100 * kMs);
  EXPECT_EQ(b.tokens(), 100u);
  b.refill(5 * kMs);  // backwards: nothing
  EXPECT_EQ(b.tokens(), 100u);
  b.refill(60'000 * kMs);
  EXPECT_EQ(b.tokens(), 1000u);  // capped at one second
  b.take(1000);
  for (int i = 1; i <= 1000; ++i) b.refill(60'000 * kMs + static_cast<std::uint64_t>(i) * 500'000);
  EXPECT_EQ(b.tokens(), 500u) << "sub-byte remainders carry over";
  b.refund(10'000);
  EXPECT_EQ(b.tokens(), 1000u);
  b.set_rate(300);
  EXPECT_EQ(b.tokens(), 300u);
  EXPECT_EQ(b.capacity(), 300u);
}

TEST(HotnessTable, DecaysByHalfPerHalfLife) {
  constexpr std::uint32_t kH = HotnessTable::kHalfLifeEpochs;
  HotnessTable t;
  t.add(7, 64, 0);
  EXPECT_DOUBLE_EQ(t.score(7, 0), 64);
  EXPECT_DOUBLE_EQ(t.score(7, kH), 32);
  EXPECT_DOUBLE_EQ(t.score(7, 3 * kH), 8);
  EXPECT_NEAR(t.score(7, 1), 64 * std::exp2(-1.0 / kH), 1e-4);
  EXPECT_GT(t.score(7, 1), t.score(7, 2));
  t.add(7, 10, 3 * kH);
  EXPECT_DOUBLE_EQ(t.score(7, 3 * kH), 18);
  EXPECT_DOUBLE_EQ(t.score(7, 3 * kH + 64 * kH), 0);
  // A steady r accesses per epoch converges to r x steady_gain().
  HotnessTable s;
  for (std::uint32_t e = 0; e < 40 * kH; ++e) s.add(1, 3, e);
  EXPECT_NEAR(s.score(1, 40 * kH - 1), 3 * HotnessTable::steady_gain(), 0.05);
  EXPECT_DOUBLE_EQ(t.score(8, 3), 0);  // unknown
  t.forget(7);
  EXPECT_DOUBLE_EQ(t.score(7, 3), 0);
}

TEST(HotnessTable, StaysBoundedAndEvictsTheColdest) {
  HotnessTable t(1000);
  for (std::uint64_t id = 0; id < 5000; ++id) t.add(id, 1 + id, 0);  // later ids hotter
  EXPECT_LE(t.size(), 1000u);
  EXPECT_LE(t.memory_bytes(), 2048 * 16u);
  // The hottest survive, the coldest went.
  for (std::uint64_t id = 4900; id < 5000; ++id) EXPECT_GT(t.score(id, 0), 0) << id;
  std::size_t cold_left = 0;
  for (std::uint64_t id = 0; id < 1000; ++id) cold_left += t.score(id, 0) > 0 ? 1 : 0;
  EXPECT_EQ(cold_left, 0u);
}

}  // namespace
}  // namespace cxlpool::tiering::manager
