// SPDX-License-Identifier: Apache-2.0
// The manager end to end against a simulated two-tier placement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <set>
#include <vector>

#include "cxlpool/tiering/m5_manager.hpp"
#include "cxlpool/tiering/zipf.hpp"
#include "fake_placement.hpp"

namespace cxlpool::tiering {
namespace {

using testing::FakePlacement;
using testing::trace_page;

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kFootprint = 4000;

M5Manager make(const M5Config& c) {
  auto m = M5Manager::create(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return std::move(*m);
}

hal::PageAccess access(std::uint64_t page, std::uint64_t count, std::uint64_t words = ~0ULL) {
  hal::PageAccess a;
  a.address = page << 12;
  a.count = count;
  a.words = words;
  return a;
}

// Drives epochs: the accesses, then the plan, applied and confirmed.
struct Sim {
  Sim(const M5Config& c, std::uint64_t capacity) : manager(make(c)), placement(capacity) {}

  MigrationPlan epoch(const std::vector<hal::PageAccess>& accesses) {
    if (fast_bits) {
      // As M5 sees it: the tracker gets slow-tier accesses only; fast pages
      // show up as accessed bits, one per page per epoch.
      std::vector<hal::PageAccess> slow;
      std::vector<PageKey> accessed;
      for (const hal::PageAccess& a : accesses) {
        const PageKey k = trace_page(a.address >> 12);
        if (placement.is_fast(k))
          accessed.push_back(k);
        else
          slow.push_back(a);
      }
      manager.observe(slow, placement);
      manager.observe_fast_accessed(accessed);
    } else {
      manager.observe(accesses, placement);
    }
    now += 100 * kMs;
    MigrationPlan plan =
        manager.end_epoch({now, placement.fast_usage(), placement.slow_usage(kFootprint)}, placement);
    std::vector<PageKey> promoted, demoted;
    placement.apply(plan, promoted, demoted);
    manager.confirm(promoted, demoted);
    total_promoted += promoted.size();
    total_demoted += demoted.size();
    if (std::getenv("M5_TRACE") != nullptr) {
      const ManagerStats& st = manager.stats();
      std::printf("t=%llu ratio=%.3f T=%llu rising=%d fastacc=%llu slowacc=%llu promote=%zu demote=%zu used=%llu\n",
                  (unsigned long long)now / kMs, st.density_ratio, (unsigned long long)st.promotion_period_ns / kMs,
                  st.fast_bandwidth_rising, (unsigned long long)st.fast.accesses,
                  (unsigned long long)st.slow.accesses, plan.promote.size(), plan.demote.size(),
                  (unsigned long long)placement.used());
    }
    return plan;
  }

  std::size_t on_fast(std::uint64_t first, std::uint64_t n) const {
    std::size_t k = 0;
    for (std::uint64_t p = first; p < first + n; ++p) k += placement.is_fast(trace_page(p)) ? 1 : 0;
    return k;
  }

  M5Manager manager;
  FakePlacement placement;
  bool fast_bits = false;  // report fast-tier accesses as accessed bits
  std::uint64_t now = 0;
  std::uint64_t total_promoted = 0;
  std::uint64_t total_demoted = 0;
};

// A hot set of `n` pages from `first`, `count` accesses each, plus
// `noise` single accesses to random pages outside the hot sets.
std::vector<hal::PageAccess> workload(std::uint64_t first, std::uint64_t n, std::uint64_t count,
                                      std::uint64_t words, std::mt19937_64& rng, int noise = 3000) {
  std::vector<hal::PageAccess> out;
  for (std::uint64_t p = first; p < first + n; ++p) out.push_back(access(p, count, words));
  for (int i = 0; i < noise; ++i) {
    std::uint64_t p = rng() % kFootprint;
    if (p >= 1000 && p < 2500) p -= 1000;  // keep clear of the hot sets
    out.push_back(access(p, 1, 1ULL << (rng() % 64)));
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// The hot-set tests' tiers: 400 fast pages (high watermark 380, low 360),
// 350 of them in use.
M5Config shift_config() {
  M5Config c;
  c.rate_limit_bytes_per_s = 64ull << 20;
  c.high_watermark = 0.95;
  c.low_watermark = 0.90;
  return c;
}
void fill_fast(Sim& sim, std::uint64_t pages) {
  for (std::uint64_t p = 0; p < pages; ++p) ASSERT_TRUE(sim.placement.add_fast(trace_page(p)));
}

TEST(M5Manager, HotSetMovesUpAndAShiftedOneDisplacesIt) {
  Sim sim(shift_config(), 400);
  fill_fast(sim, 350);
  std::mt19937_64 rng(7);

  // Hot set A: pages 1000..1299, on the slow tier.
  for (int e = 0; e < 8; ++e) {
    sim.epoch(workload(1000, 300, 40, ~0ULL, rng));
    EXPECT_LE(sim.placement.used(), 380u);
  }
  EXPECT_EQ(sim.on_fast(1000, 300), 300u);
  const ManagerStats& st = sim.manager.stats();
  EXPECT_EQ(st.epochs, 8u);
  EXPECT_GT(st.plans, 0u);
  EXPECT_EQ(st.fast.promotions, sim.total_promoted);
  EXPECT_EQ(st.slow.demotions, sim.total_promoted);
  EXPECT_EQ(st.fast.demotions, sim.total_demoted);
  EXPECT_EQ(st.bytes_migrated, (sim.total_promoted + sim.total_demoted) * 4096);
  EXPECT_EQ(st.last_epoch_accesses, 300u * 40 + 3000);
  EXPECT_EQ(st.fast.hot_pages + st.slow.hot_pages, sim.manager.nominations().size());
  EXPECT_GE(st.fast.hot_pages, 300u);
  // Settled: the hot set is on the fast tier, the slow tier's density is low.
  EXPECT_LT(st.density_ratio, 1.0);
  EXPECT_EQ(st.fast.accesses + st.slow.accesses, st.last_epoch_accesses);
  EXPECT_GT(st.fast.bandwidth_bps, st.slow.bandwidth_bps);

  // Hot set B: pages 2000..2299; A goes cold.
  sim.epoch(workload(2000, 300, 40, ~0ULL, rng));
  EXPECT_GT(sim.manager.stats().density_ratio, 1.0) << "guideline 1 should fire on the shift";
  for (int e = 0; e < 11; ++e) {
    sim.epoch(workload(2000, 300, 40, ~0ULL, rng));
    EXPECT_LE(sim.placement.used(), 380u);
  }
  EXPECT_EQ(sim.on_fast(2000, 300), 300u);
  EXPECT_LE(sim.on_fast(1000, 300), 80u);
}

TEST(M5Manager, ShiftedHotSetDisplacesTheOldOneWithAccessedBits) {
  Sim sim(shift_config(), 400);
  sim.fast_bits = true;
  fill_fast(sim, 350);
  std::mt19937_64 rng(7);
  for (int e = 0; e < 8; ++e) sim.epoch(workload(1000, 300, 40, ~0ULL, rng));
  EXPECT_EQ(sim.on_fast(1000, 300), 300u);
  // The old set's activity must decay below the new one's before a swap
  // (half-life 8 epochs): a few epochs slower than without accessed bits.
  for (int e = 0; e < 16; ++e) {
    sim.epoch(workload(2000, 300, 40, ~0ULL, rng));
    EXPECT_LE(sim.placement.used(), 380u);
  }
  EXPECT_EQ(sim.on_fast(2000, 300), 300u);
  EXPECT_LE(sim.on_fast(1000, 300), 80u);
}

TEST(M5Manager, AccessedBitsPickIdleFastPagesAsVictims) {
  // 100 fast pages, listed by the placement with the busy half first (where
  // LRU order alone would take victims): pages 0..49 are used every epoch,
  // 50..99 never. A hot slow-tier set of 40 must displace idle pages only.
  Sim sim(shift_config(), 106);  // high watermark 100: full, every promotion is a swap
  sim.fast_bits = true;
  fill_fast(sim, 100);
  std::mt19937_64 rng(3);
  for (int e = 0; e < 12; ++e) {
    std::vector<hal::PageAccess> a;
    for (std::uint64_t p = 0; p < 50; ++p) a.push_back(access(p, 2));
    for (std::uint64_t p = 1000; p < 1040; ++p) a.push_back(access(p, 20));
    std::shuffle(a.begin(), a.end(), rng);
    sim.epoch(a);
    ASSERT_EQ(sim.on_fast(0, 50), 50u) << "a page used every epoch was demoted in epoch " << e;
  }
  EXPECT_EQ(sim.on_fast(1000, 40), 40u);
  EXPECT_EQ(sim.total_demoted, 40u);
}

TEST(M5Manager, AccessedBitsHoldBackSwapsBetweenEquallyActivePages) {
  // Every fast page is used every epoch, and so is every candidate (more
  // often, but an accessed bit cannot tell): nothing is swapped, only the
  // room below the high watermark is filled.
  Sim sim(shift_config(), 110);  // high watermark 104
  sim.fast_bits = true;
  fill_fast(sim, 100);
  std::mt19937_64 rng(5);
  for (int e = 0; e < 15; ++e) {
    std::vector<hal::PageAccess> a;
    for (std::uint64_t p = 0; p < 100; ++p) a.push_back(access(p, 1));
    for (std::uint64_t p = 1000; p < 1030; ++p) a.push_back(access(p, 20));
    std::shuffle(a.begin(), a.end(), rng);
    sim.epoch(a);
  }
  EXPECT_EQ(sim.total_demoted, 0u);
  EXPECT_EQ(sim.total_promoted, 4u);
  EXPECT_EQ(sim.on_fast(0, 100), 100u);
}

TEST(M5Manager, HotSparsePagesMoveInEveryMode) {
  // The hot set touches 2 of 64 words per page (a Redis-like layout). Its
  // pages are sparse, and far hotter than anything else: HPT-driven mode
  // discounts them but still moves them.
  for (const char* mode : {"hpt", "hpt+sparse", "hwt"}) {
    M5Config c;
    if (std::string(mode) == "hwt") c.nominator = NominatorMode::kHwt;
    if (std::string(mode) == "hpt+sparse") c.promote_sparse = true;
    Sim sim(c, 1000);
    std::mt19937_64 rng(11);
    for (int e = 0; e < 5; ++e) sim.epoch(workload(1000, 200, 40, 0x3ULL << 10, rng, 500));
    EXPECT_EQ(sim.on_fast(1000, 200), 200u) << mode;
    if (std::string(mode) == "hpt") {
      bool all_sparse = true;
      std::size_t hot = 0;
      for (const Nomination& n : sim.manager.nominations()) {
        if (n.page.address >> 12 >= 1000 && n.page.address >> 12 < 1200) {
          ++hot;
          all_sparse = all_sparse && n.page_class == PageClass::kSparse;
        }
      }
      EXPECT_EQ(hot, 200u);
      EXPECT_TRUE(all_sparse);
    }
  }
}

TEST(M5Manager, AOneBurstPageIsNotPromotedAReusedOneIs) {
  M5Config c;
  Sim sim(c, 1000);
  std::mt19937_64 rng(5);
  // Page 1500 is read densely in one epoch (a streamed page) and never
  // again; page 1600 is read a little in every epoch.
  std::vector<hal::PageAccess> first = workload(1000, 0, 0, 0, rng, 200);
  first.push_back(access(1500, 64));
  first.push_back(access(1600, 8));
  sim.epoch(first);
  for (int e = 0; e < 6; ++e) {
    std::vector<hal::PageAccess> rest = workload(1000, 0, 0, 0, rng, 200);
    rest.push_back(access(1600, 8));
    sim.epoch(rest);
  }
  EXPECT_FALSE(sim.placement.is_fast(trace_page(1500))) << "no reuse: moving it buys nothing";
  EXPECT_TRUE(sim.placement.is_fast(trace_page(1600)));
}

// A sampled tracker misses a hot page in some epochs: the pool still names
// it, after the epoch's own nominations, with count 0.
TEST(M5Manager, PagesMissedInAnEpochAreStillNamedFromThePool) {
  M5Config c;
  c.rate_limit_bytes_per_s = 0;  // watch the nominations only
  auto m = make(c);
  FakePlacement placement(100);
  auto run_epoch = [&](std::uint64_t e, const std::vector<hal::PageAccess>& batch) {
    m.observe(batch, placement);
    m.end_epoch({e * 100 * kMs, {100, 0, 0}, {10'000, 5'000, 0}}, placement);
  };
  for (std::uint64_t e = 1; e <= 4; ++e) run_epoch(e, {access(50, 6), access(60, 3)});
  ASSERT_EQ(m.nominations().size(), 2u);
  run_epoch(5, {access(70, 4)});  // 50 and 60 not seen this epoch
  const auto& n = m.nominations();
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].page.address >> 12, 70u);
  EXPECT_EQ(n[0].count, 4u);
  EXPECT_EQ(n[1].page.address >> 12, 50u);  // the hotter one first
  EXPECT_EQ(n[1].count, 0u);
  EXPECT_EQ(n[2].page.address >> 12, 60u);
  EXPECT_EQ(n[2].count, 0u);
  EXPECT_EQ(m.stats().slow.hot_pages, 3u);
  // Never beyond top_k.
  ASSERT_TRUE(m.set_knob("top_k", "2"));
  run_epoch(6, {access(70, 4)});
  EXPECT_EQ(m.nominations().size(), 2u);
}

TEST(M5Manager, RunsAreExpandedWithARotatingWindow) {
  M5Config c;
  c.rate_limit_bytes_per_s = 0;  // watch the nominations only
  auto m = make(c);
  FakePlacement placement(100);
  std::set<std::uint64_t> seen;
  for (std::uint64_t e = 1; e <= 4; ++e) {
    hal::PageAccess run = access(10'000, 5, 0);
    run.pages = 1000;
    const std::vector<hal::PageAccess> batch = {run};
    m.observe(batch, placement);
    const MigrationPlan plan = m.end_epoch({e * 100 * kMs, {100, 0, 0}, {10'000, 5'000, 0}}, placement);
    EXPECT_TRUE(plan.promote.empty());
    EXPECT_EQ(m.stats().last_epoch_accesses, 5000u);
    EXPECT_EQ(m.stats().slow.accesses, 5000u);
    EXPECT_EQ(m.nominations().size(), M5Manager::kMaxRunPages);
    for (const Nomination& n : m.nominations()) {
      EXPECT_EQ(n.count, 5u);
      EXPECT_EQ(n.location, TierLocation::kSlow);
      seen.insert(n.page.address >> 12);
    }
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(*seen.begin(), 10'000u);
  EXPECT_EQ(*seen.rbegin(), 10'999u);
}

TEST(M5Manager, RateLimitAndRefunds) {
  M5Config c;
  c.rate_limit_bytes_per_s = 1ull << 20;  // 256 pages per second
  auto m = make(c);
  FakePlacement placement(100'000);
  std::uint64_t now = 0;
  // The same top_k pages every epoch: they become candidates once reused
  // kMinReuseEpochs epochs after their first nomination.
  const auto epoch = [&](bool apply) {
    std::vector<hal::PageAccess> batch;
    // Only slow-tier traffic is seen (M5's trackers sit on the CXL side), so
    // the slow tier stays the denser one and every epoch may promote.
    for (std::uint64_t i = 0; i < 512; ++i) {
      if (!placement.is_fast(trace_page(i))) batch.push_back(access(i, 10));
    }
    m.observe(batch, placement);
    now += 100 * kMs;
    MigrationPlan plan = m.end_epoch({now, placement.fast_usage(), {1'000'000, 500'000, 0}}, placement);
    std::vector<PageKey> promoted, demoted;
    if (apply) placement.apply(plan, promoted, demoted);
    m.confirm(promoted, demoted);
    return plan;
  };
  for (int warm = 0; warm < 2; ++warm) EXPECT_TRUE(epoch(true).promote.empty());
  MigrationPlan p = epoch(true);
  EXPECT_EQ(p.promote.size(), 256u);  // the full bucket
  EXPECT_EQ(p.deferred_by_rate_limit, 512u - 256u);  // top_k nominations
  EXPECT_EQ(m.stats().fast.rate_limit_hits, 1u);
  EXPECT_EQ(m.stats().rate_budget_bytes, 0u);
  // Nothing moved: the charge comes back.
  p = epoch(false);
  EXPECT_EQ(p.promote.size(), 25u);
  EXPECT_EQ(m.stats().rate_budget_bytes, 25u * 4096 + (104857u - 25 * 4096));
  EXPECT_EQ(m.stats().fast.promotions, 256u);
  p = epoch(true);
  EXPECT_EQ(p.promote.size(), 51u);
  EXPECT_EQ(m.stats().fast.rate_limit_hits, 3u);
  // Rate 0 at run time: no migration at all.
  ASSERT_TRUE(m.set_knob("rate_limit_mib_s", "0").has_value());
  p = epoch(true);
  EXPECT_TRUE(p.promote.empty());
  EXPECT_TRUE(p.demote.empty());
}

TEST(M5Manager, KnobsAtRunTime) {
  auto m = make(M5Config{});
  FakePlacement placement(100);
  EXPECT_EQ(m.set_knob("top_k", "4").value(), "512");
  EXPECT_EQ(m.config().top_k, 4u);
  auto bad = m.set_knob("top_k", "0");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("tiering.top_k"), std::string::npos);
  EXPECT_EQ(m.config().top_k, 4u);
  EXPECT_FALSE(m.set_knob("nonsense", "1").has_value());

  std::vector<hal::PageAccess> batch;
  for (std::uint64_t p = 0; p < 20; ++p) batch.push_back(access(p, 10 + p));
  // The trackers of the running epoch keep their geometry...
  m.observe(batch, placement);
  m.end_epoch({100 * kMs, {100, 0, 0}, {1000, 20, 0}}, placement);
  EXPECT_EQ(m.nominations().size(), 20u);
  // ...and the next epoch has the new one.
  m.observe(batch, placement);
  m.end_epoch({200 * kMs, {100, 0, 0}, {1000, 20, 0}}, placement);
  ASSERT_EQ(m.nominations().size(), 4u);
  EXPECT_EQ(m.nominations()[0].page.address >> 12, 19u);

  EXPECT_EQ(m.set_knob("nominator", "hwt").value(), "hpt");
  m.observe(batch, placement);
  m.end_epoch({300 * kMs, {100, 0, 0}, {1000, 20, 0}}, placement);
  m.observe(batch, placement);
  m.end_epoch({400 * kMs, {100, 0, 0}, {1000, 20, 0}}, placement);
  EXPECT_EQ(m.config().nominator, NominatorMode::kHwt);
  EXPECT_LE(m.nominations().size(), 4u);
  EXPECT_EQ(m.set_knob("tiering.min_period_ms", "1").value(), "10");
  EXPECT_EQ(m.config().min_period_ns, 1 * kMs);
}

TEST(M5Manager, PeriodFollowsTheDensityRatio) {
  M5Config c;
  auto m = make(c);
  FakePlacement placement(1000);
  for (std::uint64_t p = 0; p < 100; ++p) ASSERT_TRUE(placement.add_fast(trace_page(p)));
  // Fast: 100 pages, 1000 accesses; slow: 400 pages, 2000 accesses ->
  // ratio (2000/400) / (1000/100) = 0.5 -> T = 1.6 s.
  std::vector<hal::PageAccess> batch;
  for (std::uint64_t p = 0; p < 100; ++p) batch.push_back(access(p, 10));
  for (std::uint64_t p = 500; p < 900; ++p) batch.push_back(access(p, 5));
  m.observe(batch, placement);
  m.end_epoch({100 * kMs, {1000, 100, 0}, {1000, 400, 0}}, placement);
  EXPECT_DOUBLE_EQ(m.stats().density_ratio, 0.5);
  EXPECT_EQ(m.stats().promotion_period_ns, 1600 * kMs);
  // The first epoch is always due, but no page has been reused yet.
  EXPECT_EQ(m.stats().plans, 0u);
  // Within the period and with flat bandwidth, no promotion: the slow pages
  // (5 accesses per epoch) are not hotter than the fast ones (10).
  for (std::uint64_t e = 2; e <= 16; ++e) {
    m.observe(batch, placement);
    const MigrationPlan plan = m.end_epoch({e * 100 * kMs, {1000, 100, 0}, {1000, 400, 0}}, placement);
    EXPECT_TRUE(plan.promote.empty()) << e;
  }
  EXPECT_EQ(m.stats().plans, 0u);
  // 1.6 s after the first epoch the period is due: the slow pages fill the
  // free room of the fast tier (nothing needs to be swapped out).
  m.observe(batch, placement);
  const MigrationPlan due = m.end_epoch({1700 * kMs, {1000, 100, 0}, {1000, 400, 0}}, placement);
  EXPECT_EQ(due.promote.size(), std::min<std::size_t>(400, c.batch_pages));
  EXPECT_TRUE(due.demote.empty());
  EXPECT_EQ(m.stats().plans, 1u);
}

// Every fourth page on the fast tier, located without a table: the test
// times the manager, not a placement lookup.
class StripedPlacement final : public PlacementView {
 public:
  TierLocation locate(const PageKey& page) const override {
    return (page.address >> 12) % 4 == 0 ? TierLocation::kFast : TierLocation::kSlow;
  }
  void fast_pages(std::vector<PageKey>& out, std::size_t max) const override {
    for (std::uint64_t p = 0; p < 200'000 && out.size() < max; p += 4) out.push_back(trace_page(p));
  }
  TierUsage fast_usage() const { return {60'000, 50'000, 0}; }
};

TEST(M5Manager, ObserveTakesABigBatchAndNominates) {
  M5Config c;
  auto m = make(c);
  StripedPlacement placement;
  auto zipf = ZipfGenerator::create(200'000, 0.99, 1);
  ASSERT_TRUE(zipf.has_value());
  std::mt19937_64 rng(3);
  std::vector<hal::PageAccess> batch;
  for (int i = 0; i < 300'000; ++i) {
    batch.push_back(access(zipf->next_rank(), 1 + rng() % 4, rng() & rng()));
  }
  // CPU time of this thread: other work on a shared machine does not count.
  const auto cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  double best_ms = 1e9;
  for (int round = 0; round < 3; ++round) {
    const double t0 = cpu_ms();
    m.observe(batch, placement);
    best_ms = std::min(best_ms, cpu_ms() - t0);
    m.end_epoch({static_cast<std::uint64_t>(round + 1) * 100 * kMs, placement.fast_usage(), {200'000, 150'000, 0}},
                placement);
    EXPECT_FALSE(m.nominations().empty());
  }
  // Reported, not asserted: a time bound fails on a loaded machine or a
  // sanitizer build (211 ms under ASan at -O1 beside three builds). The
  // manager's cost per million accesses is measured by
  // tests/bench/tiering/sketch_bench (docs/perf.md).
  std::printf("observe: 300000 accesses in %.1f ms\n", best_ms);
}

}  // namespace
}  // namespace cxlpool::tiering
