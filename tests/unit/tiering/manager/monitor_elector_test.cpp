// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cxlpool/tiering/manager/elector.hpp"
#include "cxlpool/tiering/manager/monitor.hpp"
#include "cxlpool/tiering/manager/swap_judge.hpp"

namespace cxlpool::tiering::manager {
namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(PromotionPeriod, FollowsTheM5Rule) {
  M5Config c;  // f = 10 Hz, n = 4, period in [10 ms, 10 s]
  EXPECT_EQ(promotion_period_ns(1.0, c), 100 * kMs);           // 1 / (1 * 10)
  EXPECT_EQ(promotion_period_ns(0.5, c), 1600 * kMs);          // 1 / (0.0625 * 10)
  EXPECT_EQ(promotion_period_ns(std::sqrt(2.0), c), 25 * kMs);  // 1 / (4 * 10)
  c.fscale_power = 3;
  EXPECT_EQ(promotion_period_ns(0.5, c), 800 * kMs);  // 1 / (0.125 * 10)
  c.fscale_power = 1;
  c.base_frequency_hz = 2;
  EXPECT_EQ(promotion_period_ns(0.25, c), 2000 * kMs);  // 1 / (0.25 * 2)
}

TEST(PromotionPeriod, ClampsAndGuards) {
  M5Config c;
  EXPECT_EQ(promotion_period_ns(2.0, c), 10 * kMs);  // 6.25 ms, below the minimum
  c.min_period_ns = 1 * kMs;
  EXPECT_EQ(promotion_period_ns(2.0, c), 6'250'000u);
  EXPECT_EQ(promotion_period_ns(0.1, c), c.max_period_ns);  // 1000 s
  EXPECT_EQ(promotion_period_ns(kInf, c), c.min_period_ns);  // no fast-tier traffic
  EXPECT_EQ(promotion_period_ns(0.0, c), c.max_period_ns);   // no slow-tier traffic
  EXPECT_EQ(promotion_period_ns(std::nan(""), c), c.max_period_ns);
  EXPECT_EQ(promotion_period_ns(-1.0, c), c.max_period_ns);
  EXPECT_EQ(promotion_period_ns(1e-300, c), c.max_period_ns);  // frequency underflows
  EXPECT_EQ(promotion_period_ns(1e300, c), c.min_period_ns);
}

TEST(DensityRatio, Guards) {
  EXPECT_DOUBLE_EQ(density_ratio(4.0, 2.0), 2.0);
  EXPECT_EQ(density_ratio(4.0, 0.0), kInf);
  EXPECT_EQ(density_ratio(0.0, 0.0), 0.0);
  EXPECT_EQ(density_ratio(0.0, 3.0), 0.0);
  EXPECT_EQ(density_ratio(std::nan(""), 3.0), 0.0);
  EXPECT_EQ(density_ratio(3.0, std::nan("")), kInf);
}

TEST(Elector, WaitsForThePeriod) {
  M5Config c;
  Elector e;
  Election x = e.decide(0, 0.5, false, c);  // never promoted: due now
  EXPECT_TRUE(x.promote);
  EXPECT_EQ(x.period_ns, 1600 * kMs);
  EXPECT_EQ(x.batch_pages, c.batch_pages);
  e.promoted(0);
  EXPECT_FALSE(e.decide(1000 * kMs, 0.5, false, c).promote);
  EXPECT_FALSE(e.decide(1599 * kMs, 0.5, false, c).promote);
  EXPECT_TRUE(e.decide(1600 * kMs, 0.5, false, c).promote);
  EXPECT_EQ(e.period_ns(), 1600 * kMs);
  // A ratio of 1 shortens the period to 100 ms.
  EXPECT_TRUE(e.decide(100 * kMs, 1.0, false, c).promote);
  EXPECT_FALSE(e.decide(99 * kMs, 1.0, false, c).promote);
  // No slow-tier traffic: only the maximum period.
  EXPECT_FALSE(e.decide(9999 * kMs, 0.0, false, c).promote);
  EXPECT_TRUE(e.decide(10000 * kMs, 0.0, false, c).promote);
}

TEST(Elector, GuidelineOnePromotesEarlyAndHard) {
  M5Config c;
  Elector e;
  e.promoted(0);
  const Election x = e.decide(1 * kMs, 1.5, false, c);  // 1 ms after a promotion
  EXPECT_TRUE(x.promote);
  EXPECT_TRUE(x.slow_denser);
  EXPECT_EQ(x.batch_pages, std::uint64_t{c.batch_pages} * kHardBatchFactor);
  const Election idle_fast = e.decide(2 * kMs, kInf, false, c);
  EXPECT_TRUE(idle_fast.promote);
  EXPECT_EQ(idle_fast.period_ns, c.min_period_ns);
  // At parity the slow tier is not denser: normal batch, normal period.
  const Election parity = e.decide(3 * kMs, 1.0, false, c);
  EXPECT_FALSE(parity.promote);
  EXPECT_EQ(parity.batch_pages, c.batch_pages);
}

TEST(Elector, GuidelineTwoKeepsPromotingWhileFastBandwidthRises) {
  M5Config c;
  Elector e;
  e.promoted(0);
  EXPECT_FALSE(e.decide(50 * kMs, 0.5, false, c).promote);
  const Election x = e.decide(50 * kMs, 0.5, true, c);
  EXPECT_TRUE(x.promote);
  EXPECT_TRUE(x.fast_rising);
  EXPECT_EQ(x.batch_pages, c.batch_pages);
}

EpochInput at(std::uint64_t now_ns, std::uint64_t fast_used, std::uint64_t slow_used) {
  EpochInput in;
  in.now_ns = now_ns;
  in.fast = {1000, fast_used, 0};
  in.slow = {4000, slow_used, 0};
  return in;
}

TEST(Monitor, EstimatesBandwidthAndDensity) {
  Monitor m;
  m.end_epoch(at(0, 100, 100), 100 * kMs);  // starts the clock
  m.add(TierLocation::kFast, 1000);
  m.add(TierLocation::kSlow, 3000);
  m.add(TierLocation::kUnknown, 7);
  EXPECT_EQ(m.accesses(), 4007u);
  const MonitorEpoch& e = m.end_epoch(at(1'000 * kMs, 100, 200), 100 * kMs);
  EXPECT_EQ(e.duration_ns, 1'000 * kMs);
  EXPECT_EQ(e.fast.accesses, 1000u);
  EXPECT_DOUBLE_EQ(e.fast.bandwidth_bps, 64'000.0);
  EXPECT_DOUBLE_EQ(e.slow.bandwidth_bps, 192'000.0);
  EXPECT_DOUBLE_EQ(e.fast.density, 640.0);
  EXPECT_DOUBLE_EQ(e.slow.density, 960.0);
  EXPECT_DOUBLE_EQ(e.density_ratio, 1.5);
  EXPECT_EQ(e.unplaced_accesses, 7u);
  EXPECT_EQ(m.accesses(), 0u);  // counters restart
}

TEST(Monitor, HardwareCountersWin) {
  Monitor m;
  m.add(TierLocation::kFast, 1000);
  EpochInput in = at(5 * kMs, 10, 10);
  in.fast.measured_bandwidth_bps = 1'000'000;
  const MonitorEpoch& e = m.end_epoch(in, 100 * kMs);  // first epoch: nominal duration
  EXPECT_EQ(e.duration_ns, 100 * kMs);
  EXPECT_DOUBLE_EQ(e.fast.bandwidth_bps, 1'000'000.0);
  EXPECT_DOUBLE_EQ(e.slow.bandwidth_bps, 0.0);
  EXPECT_EQ(e.density_ratio, 0.0);
}

TEST(Monitor, NoFastTrafficIsAnInfiniteRatio) {
  Monitor m;
  m.add(TierLocation::kSlow, 10);
  EXPECT_EQ(m.end_epoch(at(0, 0, 0), 100 * kMs).density_ratio, kInf);
}

TEST(Monitor, TrendIgnoresNoiseAndSeesRises) {
  Monitor m;
  std::uint64_t now = 0;
  const auto epoch = [&](std::uint64_t fast) {
    m.add(TierLocation::kFast, fast);
    m.add(TierLocation::kSlow, 1000);
    now += 100 * kMs;
    return m.end_epoch(at(now, 500, 500), 100 * kMs).fast_rising;
  };
  EXPECT_FALSE(epoch(1000));  // no promotion period yet: nothing to compare with
  m.mark_promotion_period();
  // +-4% noise around a flat 1000 is not a rise.
  for (const std::uint64_t v : {1040, 960, 1040, 990, 1030, 960}) {
    EXPECT_FALSE(epoch(v)) << v;
    m.mark_promotion_period();
  }
  // A real step up is.
  EXPECT_TRUE(epoch(1500));
  m.mark_promotion_period();
  EXPECT_TRUE(epoch(2000));
  m.mark_promotion_period();
  // Flat again: not rising.
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(epoch(2000));
    m.mark_promotion_period();
  }
  // The reference is the last promotion period, not the last epoch: a slow
  // climb over epochs that were not promotion periods adds up.
  EXPECT_FALSE(epoch(2080));
  EXPECT_FALSE(epoch(2160));
  EXPECT_TRUE(epoch(2240));
  // A drop, then a recovery after a promotion period, is a rise (the shape
  // of a shifted hot set being promoted).
  m.mark_promotion_period();
  EXPECT_FALSE(epoch(300));
  m.mark_promotion_period();
  EXPECT_TRUE(epoch(1200));
  // Falling is not rising.
  m.mark_promotion_period();
  EXPECT_FALSE(epoch(500));
}

TEST(Elector, HotCandidatesPromoteBeforeThePeriod) {
  M5Config c;
  Elector el;
  EXPECT_TRUE(el.decide(0, 0.01, false, c).promote);  // the first epoch is due
  el.promoted(0);
  const std::uint64_t t = 100'000'000;
  Election quiet = el.decide(t, 0.01, false, c, false);
  EXPECT_FALSE(quiet.promote);
  Election hot = el.decide(t, 0.01, false, c, true);
  EXPECT_TRUE(hot.promote);
  EXPECT_TRUE(hot.hot_candidates) << "only the hot candidates' signal elected it";
  EXPECT_EQ(hot.period_ns, quiet.period_ns) << "the period rule itself is unchanged";
  // When the period elects the epoch anyway, it is a regular promotion period.
  Election due = el.decide(t + c.max_period_ns, 0.01, false, c, true);
  EXPECT_TRUE(due.promote);
  EXPECT_FALSE(due.hot_candidates);
}

TEST(SwapJudge, RaisesTheBarWhenSwapsHurtAndLowersItWhenTheyPay) {
  SwapJudge j;
  EXPECT_DOUBLE_EQ(j.factor(), SwapJudge::kStartFactor);
  // Swaps that raise the fast tier's share: the bar halves per window.
  j.epoch(0.80);
  j.swapped();
  for (std::uint32_t i = 0; i < SwapJudge::kWindowEpochs; ++i) j.epoch(0.85);
  EXPECT_DOUBLE_EQ(j.factor(), SwapJudge::kStartFactor / 2);
  // Noise changes nothing.
  j.swapped();
  for (std::uint32_t i = 0; i < SwapJudge::kWindowEpochs; ++i) j.epoch(0.85 + (i % 2 ? 0.002 : -0.002));
  EXPECT_DOUBLE_EQ(j.factor(), SwapJudge::kStartFactor / 2);
  // Swaps that lower it: the bar doubles, never above kMaxFactor.
  for (int round = 0; round < 5; ++round) {
    j.epoch(0.85);
    j.swapped();
    for (std::uint32_t i = 0; i < SwapJudge::kWindowEpochs; ++i) j.epoch(0.80);
  }
  EXPECT_DOUBLE_EQ(j.factor(), SwapJudge::kMaxFactor);
  // Without swaps the judge does not move.
  for (int i = 0; i < 50; ++i) j.epoch(0.99);
  EXPECT_DOUBLE_EQ(j.factor(), SwapJudge::kMaxFactor);
  // And never below kMinFactor.
  for (int round = 0; round < 20; ++round) {
    j.epoch(0.10);
    j.swapped();
    for (std::uint32_t i = 0; i < SwapJudge::kWindowEpochs; ++i) j.epoch(0.90);
  }
  EXPECT_DOUBLE_EQ(j.factor(), SwapJudge::kMinFactor);
}

}  // namespace
}  // namespace cxlpool::tiering::manager
