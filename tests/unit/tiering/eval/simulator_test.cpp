// SPDX-License-Identifier: Apache-2.0
// Simulator accounting on hand-made traces with known answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "prepared_trace.hpp"
#include "reference_policies.hpp"
#include "simulator.hpp"

namespace cxlpool::tiering::eval {
namespace {

constexpr std::uint64_t kBase = 0x100000;

TraceRecord rec(std::uint64_t t, std::uint64_t page, std::uint32_t size = 64, std::uint64_t offset = 0) {
  return TraceRecord{t, kBase + page * kPageBytes + offset, size, false};
}

TEST(PreparedTrace, DensePagesInAddressOrderAndWordMasks) {
  std::vector<TraceRecord> records{rec(0, 7), rec(1, 2, 128, 64), rec(2, 7, 64, 4032), rec(3, 3, 8192, 2048)};
  auto t = prepare_trace(records);
  ASSERT_TRUE(t) << t.error().message;
  // Pages 2, 3, 4, 5, 7 (the last record spans 3, 4 and 5).
  ASSERT_EQ(t->pages(), 5u);
  EXPECT_EQ(t->page_address[0], kBase + 2 * kPageBytes);
  EXPECT_EQ(t->page_address[4], kBase + 7 * kPageBytes);
  ASSERT_EQ(t->accesses.size(), 6u);
  EXPECT_EQ(t->accesses[0].page, 4u);
  EXPECT_EQ(t->accesses[0].words, 1u);
  EXPECT_EQ(t->accesses[1].page, 0u);
  EXPECT_EQ(t->accesses[1].words, 0b110u);
  EXPECT_EQ(t->accesses[2].words, 1ULL << 63);
  EXPECT_EQ(t->accesses[3].page, 1u);
  EXPECT_EQ(t->accesses[3].words, ~0ULL << 32);
  EXPECT_EQ(t->accesses[4].words, ~0ULL);
  EXPECT_EQ(t->accesses[5].words, (1ULL << 32) - 1);
  EXPECT_EQ(t->index_of(kBase + 5 * kPageBytes), 3u);
  EXPECT_FALSE(t->index_of(kBase + 6 * kPageBytes));
  EXPECT_EQ(t->start_ns, 0u);
  EXPECT_EQ(t->end_ns, 4u);
}

TEST(PreparedTrace, RejectsBadTraces) {
  EXPECT_FALSE(prepare_trace({}));
  std::vector<TraceRecord> backwards{rec(5, 0), rec(4, 1)};
  EXPECT_EQ(prepare_trace(backwards).error().code, EINVAL);
  std::vector<TraceRecord> empty_size{rec(0, 0, 0)};
  EXPECT_EQ(prepare_trace(empty_size).error().code, EINVAL);
}

TEST(Tiers, CapacityMovesAndLru) {
  Tiers tiers(6, 2);
  EXPECT_TRUE(tiers.place_fast(0));
  EXPECT_TRUE(tiers.promote(1));
  EXPECT_FALSE(tiers.promote(2));  // full
  EXPECT_FALSE(tiers.promote(1));  // already fast
  EXPECT_EQ(tiers.promotions(), 1u);
  tiers.touch(0, 100);
  tiers.touch(1, 50);
  std::vector<std::uint32_t> cold;
  tiers.coldest_fast(cold, 1);
  ASSERT_EQ(cold.size(), 1u);
  EXPECT_EQ(cold[0], 1u);
  EXPECT_EQ(tiers.reclaim_to(1, 1), 1u);
  EXPECT_FALSE(tiers.is_fast(1));
  EXPECT_EQ(tiers.demotions(), 1u);
  tiers.set_frozen(true);
  EXPECT_FALSE(tiers.promote(3));
  EXPECT_FALSE(tiers.demote(0));
  EXPECT_TRUE(tiers.accessed_since(0, 100));
  EXPECT_FALSE(tiers.accessed_since(0, 101));
}

// Pages A..D = 0..3; fast capacity 2 of 4.
std::vector<TraceRecord> hand_trace() {
  // time: page
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> a{{0, 0}, {1, 1}, {2, 2}, {3, 0}, {4, 3},
                                                               {5, 2}, {6, 2}, {7, 3}, {8, 2}, {9, 1}};
  std::vector<TraceRecord> r;
  for (auto [t, p] : a) r.push_back(rec(t, p));
  return r;
}

TEST(Simulator, NoMigrationShareIsTheFirstTouchShare) {
  auto t = prepare_trace(hand_trace());
  ASSERT_TRUE(t);
  NoMigrationPolicy policy;
  SimConfig c;
  c.fast_fraction = 0.5;
  c.epoch_ns = 5;
  c.buckets = 2;
  const SimResult r = simulate(*t, policy, c);
  // First touch: A and B fast. Accesses to A or B: t=0,1,3,9 -> 4 of 10.
  EXPECT_EQ(r.accesses, 10u);
  EXPECT_EQ(r.fast_accesses, 4u);
  EXPECT_DOUBLE_EQ(r.fast_share, 0.4);
  ASSERT_EQ(r.share_series.size(), 2u);
  EXPECT_DOUBLE_EQ(r.share_series[0], 3.0 / 5.0);  // t 0..4: A B C A D
  EXPECT_DOUBLE_EQ(r.share_series[1], 1.0 / 5.0);  // t 5..9: C C D C B
  // The second half of the time span [0, 10): t 5..9.
  EXPECT_EQ(r.late_accesses, 5u);
  EXPECT_EQ(r.late_fast_accesses, 1u);
  EXPECT_DOUBLE_EQ(r.late_share, 0.2);
  EXPECT_EQ(r.bytes_migrated, 0u);
  EXPECT_FALSE(r.has_ratio);

  c.placement = InitialPlacement::kAllSlow;
  NoMigrationPolicy slow;
  EXPECT_EQ(simulate(*t, slow, c).fast_accesses, 0u);
}

TEST(Simulator, OracleShareIsTheComputableOptimum) {
  // 64 pages, 8 epochs of 1000 ns, each with its own skewed popularity.
  std::vector<TraceRecord> records;
  std::uint64_t x = 12345;
  for (std::uint64_t t = 0; t < 8000; ++t) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t epoch = t / 1000;
    const std::uint64_t r = (x >> 33) % 100;
    // Skew: low r values hit few pages; each epoch rotates which pages.
    const std::uint64_t page = ((r * r) / 160 + epoch * 11) % 64;
    records.push_back(rec(t, page));
  }
  auto t = prepare_trace(records);
  ASSERT_TRUE(t);
  SimConfig c;
  c.fast_fraction = 0.25;
  c.epoch_ns = 1000;
  const std::uint64_t cap = static_cast<std::uint64_t>(0.25 * static_cast<double>(t->pages()));

  // Expected: per epoch, the accesses of its top-cap pages.
  std::uint64_t best = 0;
  for (std::uint64_t e = 0; e < 8; ++e) {
    std::map<std::uint32_t, std::uint64_t> counts;
    for (const Access& a : t->accesses)
      if (a.time_ns / 1000 == e) ++counts[a.page];
    std::vector<std::uint64_t> v;
    for (auto& [p, n] : counts) v.push_back(n);
    std::sort(v.rbegin(), v.rend());
    for (std::size_t i = 0; i < v.size() && i < cap; ++i) best += v[i];
  }
  OraclePolicy oracle;
  const SimResult r = simulate(*t, oracle, c);
  EXPECT_EQ(r.fast_accesses, best);
  EXPECT_GT(r.promotions, 0u);
  ASSERT_TRUE(r.has_ratio);
  EXPECT_DOUBLE_EQ(r.ratio, 1.0);
  // The last epoch ends exactly at the trace end (7999 + 1): all 8 counted.
  EXPECT_EQ(r.ratio_epochs, 8u);

  NoMigrationPolicy none;
  EXPECT_LT(simulate(*t, none, c).fast_accesses, best);
}

TEST(Simulator, HindsightPlacesWhatThePeriodBeforeUsed) {
  // 64 pages, 8 periods of 1000 ns; periods 2j and 2j+1 both use the same 16
  // pages, each pair another 16. The fast tier holds 16.
  std::vector<TraceRecord> records;
  for (std::uint64_t t = 0; t < 8000; ++t) records.push_back(rec(t, ((t / 2000) * 16 + t % 16) % 64));
  auto t = prepare_trace(records);
  ASSERT_TRUE(t);
  SimConfig c;
  c.fast_fraction = 0.25;
  c.epoch_ns = 1000;
  c.oracle_epoch_ns = 1000;
  OraclePolicy oracle(OracleWindow::kNext);
  EXPECT_EQ(simulate(*t, oracle, c).fast_accesses, 8000u);
  // First touch places the first pair's pages; from then on the placement
  // made at the start of a pair's second period (what its first used) is
  // right, the one at the start of a new pair (the old pair's) is not.
  OraclePolicy hindsight(OracleWindow::kLast);
  EXPECT_EQ(hindsight.name(), "hindsight");
  const SimResult r = simulate(*t, hindsight, c);
  EXPECT_EQ(r.fast_accesses, 5u * 1000u);
  EXPECT_EQ(r.promotions, 3u * 16u);
  EXPECT_FALSE(r.has_ratio);  // a placement bound, not a detector
}

TEST(Simulator, TopKSum) {
  const std::vector<std::uint32_t> counts{5, 1, 9, 0, 3};
  const std::vector<std::uint32_t> pages{0, 1, 2, 4};
  EXPECT_EQ(top_k_sum(counts, pages, 2), 14u);
  EXPECT_EQ(top_k_sum(counts, pages, 10), 18u);
  EXPECT_EQ(top_k_sum(counts, pages, 0), 0u);
}

// A policy that names fixed pages as hot: the ratio is computed against the
// true top-K of each epoch.
class FixedPicks final : public Policy {
 public:
  explicit FixedPicks(std::vector<std::uint32_t> picks) : picks_(std::move(picks)) {}
  std::string name() const override { return "fixed"; }
  void observe(std::span<const Access>, SimContext&) override {}
  bool hot_pages(std::vector<std::uint32_t>& out, std::size_t, SimContext&) override {
    out = picks_;
    return true;
  }

 private:
  std::vector<std::uint32_t> picks_;
};

TEST(Simulator, AccessCountRatioAgainstTrueTopK) {
  auto t = prepare_trace(hand_trace());
  ASSERT_TRUE(t);
  SimConfig c;
  c.epoch_ns = 10;
  c.ratio_k = 2;
  // Counts: A 2, B 2, C 4, D 2. True top-2 = C + one of the 2s = 6.
  FixedPicks picks({3, 3, 0, 1});  // D (2), duplicate ignored, A (2); B is past K
  const SimResult r = simulate(*t, picks, c);
  ASSERT_TRUE(r.has_ratio);
  EXPECT_EQ(r.ratio_epochs, 1u);
  EXPECT_DOUBLE_EQ(r.ratio, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(r.mean_picks, 3.0);
}

}  // namespace
}  // namespace cxlpool::tiering::eval
