// SPDX-License-Identifier: Apache-2.0
// M5-HPT / M5-HWT through the real M5Manager: slow-tier accesses reach the
// controller model, plans are applied to the simulated placement.
#include <gtest/gtest.h>

#include <map>

#include "m5_policy.hpp"
#include "reference_policies.hpp"
#include "simulator.hpp"

namespace cxlpool::tiering::eval {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

// 4096 pages; 64 scattered hot pages take 80% of the accesses, dense (all
// words); the rest spread uniformly. 400k accesses over 4 s.
std::vector<TraceRecord> hot_set_trace() {
  std::vector<TraceRecord> r;
  std::uint64_t x = 99;
  const std::uint64_t n = 400'000;
  for (std::uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t v = x >> 20;
    const bool hot = (v % 100) < 80;
    const std::uint64_t page = hot ? ((v >> 8) % 64) * 61 % 4096 : (v >> 8) % 4096;
    const std::uint64_t word = (v >> 30) % 64;
    r.push_back(TraceRecord{i * 4000 * kMs / n, page * 4096 + word * 64, 64, false});
  }
  return r;
}

std::map<std::string, std::uint64_t> counters(const SimResult& s) {
  std::map<std::string, std::uint64_t> m;
  for (const auto& [k, v] : s.counters) m[k] = v;
  return m;
}

// Every page on the slow tier, nothing moves; the ratio against the true top k.
SimConfig detection_run(std::size_t k) {
  SimConfig sim;
  sim.detection = true;
  sim.ratio_k = k;
  return sim;
}

// Every page starts on the slow tier; the share in 4 time buckets.
SimConfig all_slow_run() {
  SimConfig sim;
  sim.placement = InitialPlacement::kAllSlow;
  sim.buckets = 4;
  return sim;
}

class M5PolicyTest : public ::testing::TestWithParam<NominatorMode> {};

TEST_P(M5PolicyTest, PromotesTheHotSetFromAnEmptyFastTier) {
  auto trace = prepare_trace(hot_set_trace());
  ASSERT_TRUE(trace);
  const SimConfig sim = all_slow_run();
  M5PolicyConfig c;
  c.manager.nominator = GetParam();
  auto m5 = M5Policy::create(c);
  ASSERT_TRUE(m5) << m5.error().message;
  const SimResult r = simulate(*trace, **m5, sim);
  EXPECT_GT(r.promotions, 0u);
  // By the last second the hot pages serve from the fast tier.
  ASSERT_EQ(r.share_series.size(), 4u);
  EXPECT_GT(r.share_series[3], 0.7);
  EXPECT_GT(r.hardware_ns, 0u);
  const auto m = counters(r);
  EXPECT_EQ(m.at("promoted"), r.promotions);
  EXPECT_EQ(m.at("tracked_accesses"), m.at("slow_tier_accesses"));  // rate 1: every access

  NoMigrationPolicy none;
  EXPECT_EQ(simulate(*trace, none, sim).fast_accesses, 0u);
}

TEST_P(M5PolicyTest, DetectionFindsTheTruePages) {
  auto trace = prepare_trace(hot_set_trace());
  ASSERT_TRUE(trace);
  const SimConfig sim = detection_run(64);
  M5PolicyConfig c;
  c.manager.nominator = GetParam();
  auto m5 = M5Policy::create(c);
  ASSERT_TRUE(m5);
  const SimResult r = simulate(*trace, **m5, sim);
  ASSERT_TRUE(r.has_ratio);
  EXPECT_EQ(r.promotions, 0u);  // detection: nothing moves
  EXPECT_GT(r.ratio, 0.9);
}

TEST_P(M5PolicyTest, SamplingRateThinsWhatTheTrackerSees) {
  auto trace = prepare_trace(hot_set_trace());
  ASSERT_TRUE(trace);
  SimConfig sim;
  sim.placement = InitialPlacement::kAllSlow;
  sim.detection = true;
  M5PolicyConfig c;
  c.manager.nominator = GetParam();
  c.sampling_rate = 0.125;
  c.sampling_unit = SamplingUnit::kRecord;
  auto m5 = M5Policy::create(c);
  ASSERT_TRUE(m5);
  EXPECT_EQ((*m5)->name(), GetParam() == NominatorMode::kHwt ? "m5-hwt@1/8" : "m5-hpt@1/8");
  const auto m = counters(simulate(*trace, **m5, sim));
  const double seen = static_cast<double>(m.at("tracked_accesses")) / static_cast<double>(m.at("slow_tier_accesses"));
  EXPECT_NEAR(seen, 0.125, 0.01);
}

// Memory-side traffic: per 100 ms epoch 100 fresh pages, 20 of them read 3
// times and 80 once (interleaved), so the true top 64 are the 20 and 44 of
// the once-read pages. A record sampler at 1/8 sees few of them; a per-page
// one names every page and samples only the repeats.
std::vector<TraceRecord> few_accesses_trace() {
  std::vector<TraceRecord> r;
  const std::uint64_t epochs = 20;
  for (std::uint64_t e = 0; e < epochs; ++e) {
    std::vector<std::uint64_t> pages;
    for (std::uint64_t i = 0; i < 100; ++i) {
      const std::uint64_t page = e * 100 + i;
      for (int k = 0; k < (i % 5 == 0 ? 3 : 1); ++k) pages.push_back(page);
    }
    for (std::size_t i = 0; i < pages.size(); ++i) {
      const std::uint64_t t = e * 100 * kMs + i * (90 * kMs) / pages.size();
      r.push_back(TraceRecord{t, pages[i] * 4096 + (i % 64) * 64, 64, false});
    }
  }
  return r;
}

TEST_P(M5PolicyTest, PerPageSamplingNamesEveryTouchedPage) {
  auto trace = prepare_trace(few_accesses_trace());
  ASSERT_TRUE(trace);
  const SimConfig sim = detection_run(64);
  auto run = [&](SamplingUnit unit) {
    M5PolicyConfig c;
    c.manager.nominator = GetParam();
    c.sampling_rate = 0.125;
    c.sampling_unit = unit;
    c.exact_first = 1;
    if (unit == SamplingUnit::kPage) c.manager.min_accesses = 1;  // as the evaluation runs it
    auto m5 = M5Policy::create(c);
    EXPECT_TRUE(m5);
    return simulate(*trace, **m5, sim);
  };
  const SimResult page = run(SamplingUnit::kPage);
  const SimResult record = run(SamplingUnit::kRecord);
  const auto m = counters(page);
  // One first access per touched page and epoch, then 1/8 of the repeats.
  EXPECT_EQ(m.at("tracked_first_accesses"), 20u * 100u);
  const std::uint64_t repeats = m.at("slow_tier_accesses") - 20u * 100u;
  EXPECT_NEAR(static_cast<double>(m.at("tracked_accesses") - 20u * 100u), repeats / 8.0, repeats / 8.0 * 0.5);
  EXPECT_EQ(counters(record).at("tracked_first_accesses"), 0u);
  ASSERT_TRUE(page.has_ratio);
  ASSERT_TRUE(record.has_ratio);
  EXPECT_GT(page.ratio, 0.7);
  EXPECT_GT(page.ratio, record.ratio + 0.2);
}

// Keeping a page's first accesses exactly ranks the pages read 3 times above
// the once-read ones, which a 1/8 sampler of the repeats mostly cannot tell
// apart: (7/8)^2 of the 3-read pages show no sampled repeat.
TEST_P(M5PolicyTest, ExactFirstAccessesRankRepeatedPages) {
  auto trace = prepare_trace(few_accesses_trace());
  ASSERT_TRUE(trace);
  const SimConfig sim = detection_run(64);
  auto run = [&](std::uint32_t exact_first) {
    M5PolicyConfig c;
    c.manager.nominator = GetParam();
    c.sampling_rate = 0.125;
    c.exact_first = exact_first;
    c.manager.min_accesses = 1;
    auto m5 = M5Policy::create(c);
    EXPECT_TRUE(m5);
    return simulate(*trace, **m5, sim);
  };
  const SimResult one = run(1);
  const SimResult three = run(3);
  // No page is read more than 3 times in an epoch: every access is kept.
  const auto m = counters(three);
  EXPECT_EQ(m.at("tracked_first_accesses"), m.at("slow_tier_accesses"));
  EXPECT_EQ(m.at("tracked_accesses"), m.at("slow_tier_accesses"));
  EXPECT_LT(counters(one).at("tracked_accesses"), m.at("slow_tier_accesses"));
  ASSERT_TRUE(one.has_ratio);
  ASSERT_TRUE(three.has_ratio);
  EXPECT_GT(three.ratio, 0.95);
  EXPECT_GT(three.ratio, one.ratio + 0.05);
}

INSTANTIATE_TEST_SUITE_P(Nominators, M5PolicyTest, ::testing::Values(NominatorMode::kHpt, NominatorMode::kHwt));

// Burst promotion moves the hot pages as soon as they reach the count, not at
// the end of a query period after the manager's reuse delay: the first
// second serves more from the fast tier. The 20% background traffic (under
// one access per page per period) never reaches the count.
TEST(M5Policy, BurstPromotionReactsInsideTheQueryPeriod) {
  auto trace = prepare_trace(hot_set_trace());
  ASSERT_TRUE(trace);
  const SimConfig sim = all_slow_run();
  auto run = [&](std::uint64_t accesses, std::uint64_t quota) {
    M5PolicyConfig c;
    c.burst_accesses = accesses;
    c.burst_quota = quota;
    auto m5 = M5Policy::create(c);
    EXPECT_TRUE(m5);
    return simulate(*trace, **m5, sim);
  };
  const SimResult off = run(0, 0);
  const SimResult on = run(16, 0);
  const SimResult capped = run(16, 2);
  EXPECT_EQ(counters(off).at("burst_promoted"), 0u);
  const std::uint64_t burst = counters(on).at("burst_promoted");
  EXPECT_GE(burst, 64u);
  EXPECT_LT(burst, 128u);
  EXPECT_EQ(counters(on).at("burst_demoted"), 0u);  // the fast tier had room
  EXPECT_GT(on.share_series[0], off.share_series[0] + 0.1);
  // At most 2 per 100 ms period: the hot set arrives over 32 periods.
  const std::uint64_t epochs = counters(capped).at("epochs");
  EXPECT_LE(counters(capped).at("burst_promoted"), 2 * (epochs + 1));
  EXPECT_LT(capped.share_series[0], on.share_series[0]);
}

TEST(M5Policy, RejectsBadSamplingRates) {
  M5PolicyConfig c;
  c.sampling_rate = 0;
  EXPECT_FALSE(M5Policy::create(c));
  c.sampling_rate = 1.5;
  EXPECT_FALSE(M5Policy::create(c));
  c.sampling_rate = 0.125;
  c.exact_first = 0;
  EXPECT_FALSE(M5Policy::create(c));
  c.exact_first = kMaxExactFirst + 1;
  EXPECT_FALSE(M5Policy::create(c));
  c.exact_first = kMaxExactFirst;
  EXPECT_TRUE(M5Policy::create(c));
}

}  // namespace
}  // namespace cxlpool::tiering::eval
