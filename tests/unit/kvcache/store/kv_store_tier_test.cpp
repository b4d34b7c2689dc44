// SPDX-License-Identifier: Apache-2.0
// KvStore tier movement: leases block eviction, DRAM -> CXL -> SSD demotion
// through the admission filter, promotion on use, S3-FIFO, and an SSD log
// that evicts regions under the store.
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

TEST(KvStoreTiers, LeasesBlockEviction) {
  HarnessOptions o;
  o.dram_slots = 4;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto first = keys_of(20, 4);
  ASSERT_EQ(h.put(kAlice, first).completion.result0, 4u);
  auto get = h.call(kBob, KvOp::kGet, std::span(first).first(2));
  ASSERT_EQ(get.completion.result1, 2u);
  // Four more chunks: the leased two stay, everything else makes room (the
  // batch's own first chunks included: LRU within one commit).
  const auto second = keys_of(21, 4);
  auto commit = h.put(kAlice, second);
  ASSERT_EQ(commit.outcome, KvStatus::kOk);
  EXPECT_EQ(commit.completion.result0, 4u);
  EXPECT_EQ(h.store().counters().tiers[0].evictions, 4u);
  EXPECT_EQ(h.call(kAlice, KvOp::kLookup, first).completion.result0, 2u);
  EXPECT_EQ(h.call(kAlice, KvOp::kLookup, std::span(second).subspan(2)).completion.result0, 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(h.holds(get.locations[i], first[i]));
  // With all four slots leased nothing more gets in.
  auto all = h.call(kBob, KvOp::kGet, std::span(second).subspan(2));
  ASSERT_EQ(all.completion.result1, 2u);
  EXPECT_EQ(h.put(kAlice, keys_of(22, 1)).outcome, KvStatus::kRejected);
  ASSERT_EQ(h.call(kBob, KvOp::kRelease, {}, get.completion.result0).outcome, KvStatus::kOk);
  ASSERT_EQ(h.call(kBob, KvOp::kRelease, {}, all.completion.result0).outcome, KvStatus::kOk);
  EXPECT_EQ(h.put(kAlice, keys_of(23, 4)).completion.result0, 4u);
  EXPECT_EQ(h.call(kAlice, KvOp::kLookup, first).completion.result0, 0u);
}

TEST(KvStoreTiers, DemotionDramToCxlToSsdWithAdmission) {
  HarnessOptions o;
  o.dram_slots = 2;
  o.cxl_slots = 2;
  o.ssd = true;
  o.config.promote_on_get = false;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto a = keys_of(30, 1), b = keys_of(31, 1), c = keys_of(32, 1), d = keys_of(33, 1), e = keys_of(34, 1),
             f = keys_of(35, 1);
  ASSERT_EQ(h.put(kAlice, a).completion.result0, 1u);
  ASSERT_EQ(h.put(kAlice, b).completion.result0, 1u);
  auto get = h.call(kAlice, KvOp::kGet, a);
  ASSERT_EQ(h.call(kAlice, KvOp::kRelease, {}, get.completion.result0).outcome, KvStatus::kOk);
  for (const auto* k : {&c, &d}) ASSERT_EQ(h.put(kAlice, *k).completion.result0, 1u);
  EXPECT_EQ(h.tiers(a), std::vector<std::uint16_t>{1});
  EXPECT_EQ(h.tiers(b), std::vector<std::uint16_t>{1});
  for (const auto* k : {&e, &f}) ASSERT_EQ(h.put(kAlice, *k).completion.result0, 1u);
  EXPECT_EQ(h.tiers(a), std::vector<std::uint16_t>{2});
  EXPECT_TRUE(h.tiers(b).empty());
  EXPECT_EQ(h.tiers(c), std::vector<std::uint16_t>{1});
  EXPECT_EQ(h.tiers(d), std::vector<std::uint16_t>{1});
  EXPECT_EQ(h.tiers(e), std::vector<std::uint16_t>{0});
  auto look = h.call(kAlice, KvOp::kLookup, a);
  ASSERT_EQ(look.locations.size(), 1u);
  EXPECT_EQ(look.locations[0].offset, 0u);
  EXPECT_EQ(look.locations[0].length, kChunk);
  EXPECT_EQ(look.locations[0].flags, proto::kKvLocationSsdCopy);
  const KvStoreCounters& k = h.store().counters();
  EXPECT_EQ(k.tiers[0].evictions, 4u);
  EXPECT_EQ(k.tiers[1].demotions, 4u);
  EXPECT_EQ(k.tiers[1].evictions, 2u);
  EXPECT_EQ(k.tiers[2].demotions, 1u);
  EXPECT_EQ(k.tiers[2].admissions_rejected, 1u);
  EXPECT_EQ(k.tiers[2].chunks, 1u);
  EXPECT_EQ(k.tiers[1].chunks, 2u);
  EXPECT_EQ(k.tiers[1].used_bytes, 2 * kSlot);
  EXPECT_EQ(k.tiers[2].bytes_written, 0u);  // per-region: nothing sealed yet
  ASSERT_TRUE(h.store().flush());
  EXPECT_GT(h.store().counters().tiers[2].bytes_written, 0u);
}

TEST(KvStoreTiers, CxlChunkIsPromotedOnGet) {
  HarnessOptions o;
  o.dram_slots = 2;
  o.cxl_slots = 4;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(40, 4);
  ASSERT_EQ(h.put(kAlice, keys).completion.result0, 4u);
  EXPECT_EQ(h.tiers(keys), (std::vector<std::uint16_t>{1, 1, 0, 0}));
  auto get = h.call(kBob, KvOp::kGet, std::span(keys).first(1));
  ASSERT_EQ(get.outcome, KvStatus::kOk);
  ASSERT_EQ(get.locations.size(), 1u);
  EXPECT_EQ(get.locations[0].tier, 0u);
  EXPECT_TRUE(h.holds(get.locations[0], keys[0]));
  EXPECT_EQ(h.store().counters().tiers[0].promotions, 1u);
  // The DRAM chunk it displaced went to CXL, intact.
  auto look = h.call(kAlice, KvOp::kLookup, keys);
  ASSERT_EQ(look.completion.result0, 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(h.holds(look.locations[i], keys[i]));
  EXPECT_EQ(look.locations[0].tier, 0u);
  // Promoting chunk 1 needs a DRAM slot: Bob's leased chunk 0 is not the
  // victim, chunk 3 is.
  auto held = h.call(kAlice, KvOp::kGet, std::span(keys).subspan(1, 1));
  ASSERT_EQ(held.locations.size(), 1u);
  EXPECT_EQ(held.locations[0].tier, 0u);
  EXPECT_EQ(h.tiers(keys), (std::vector<std::uint16_t>{0, 0, 1, 1}));
  EXPECT_TRUE(h.holds(get.locations[0], keys[0]));
}

TEST(KvStoreTiers, S3FifoEvictsAndKeepsBytes) {
  HarnessOptions o;
  o.dram_slots = 4;
  o.config.eviction = EvictionKind::kS3Fifo;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  for (std::uint64_t s = 0; s < 6; ++s) ASSERT_EQ(h.put(kAlice, keys_of(50 + s, 2)).completion.result0, 2u);
  EXPECT_EQ(h.store().counters().tiers[0].chunks, 4u);
  EXPECT_EQ(h.store().counters().tiers[0].evictions, 8u);
  const auto last = keys_of(55, 2);
  auto look = h.call(kAlice, KvOp::kLookup, last);
  ASSERT_EQ(look.completion.result0, 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(h.holds(look.locations[i], last[i]));
}

// A log of three regions (15 chunks each) behind a 1-slot DRAM tier:
// chunks the log evicts leave the index, so lookups never claim them.
TEST(KvStoreTiers, SsdLogEvictionLeavesTheIndexConsistent) {
  HarnessOptions o;
  o.dram_slots = 1;
  o.ssd = true;
  o.ssd_regions = 3;
  o.config.admission.threshold = 1;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  std::vector<proto::KvKey> all;
  for (std::uint64_t s = 0; s < 60; ++s) {
    const auto k = keys_of(100 + s, 1);
    ASSERT_EQ(h.put(kAlice, k).completion.result0, 1u) << s;
    all.push_back(k[0]);
  }
  const KvStoreCounters& c = h.store().counters();
  EXPECT_GT(c.tiers[2].evictions, 0u);
  std::size_t cached = 0;
  for (const auto& k : all) {
    const auto t = h.tiers({&k, 1});
    if (t.empty()) continue;
    ++cached;
    auto get = h.call(kAlice, KvOp::kGet, {&k, 1});
    ASSERT_EQ(get.outcome, KvStatus::kOk);
    ASSERT_EQ(get.completion.result1, 1u) << "indexed but not readable";
    EXPECT_TRUE(h.holds(get.locations[0], k));
    ASSERT_EQ(h.call(kAlice, KvOp::kRelease, {}, get.completion.result0).outcome, KvStatus::kOk);
  }
  EXPECT_LT(cached, all.size());
  EXPECT_GT(cached, 15u);
  EXPECT_LE(h.store().counters().tiers[2].chunks, 45u);
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
