// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/index.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "../kv_status_print.hpp"

namespace cxlpool::kvcache {
namespace {

ChunkKey key(std::uint64_t i) { return ChunkKey{i * 0x9E3779B97F4A7C15ULL + 1, i}; }

ChunkInfo info(std::uint32_t ns = 0, KvTier tier = KvTier::kDram, std::uint64_t off = 0,
               std::uint32_t len = 4096) {
  ChunkInfo c;
  c.tier = tier;
  c.ns_id = ns;
  c.offset = off;
  c.length = len;
  return c;
}

TEST(KvIndex, InsertFindUpdateErase) {
  ChunkIndex idx(16);
  ASSERT_EQ(idx.insert(key(1), info(0, KvTier::kDram, 64)), KvStatus::kOk);
  EXPECT_EQ(idx.insert(key(1), info()), KvStatus::kBadState) << "present: update it instead";
  const ChunkEntry* e = idx.find(key(1));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->info.offset, 64u);
  ASSERT_EQ(idx.update(key(1), info(0, KvTier::kSsd, 8192, 100)), KvStatus::kOk);
  EXPECT_EQ(idx.find(key(1))->info.tier, KvTier::kSsd);
  EXPECT_EQ(idx.stats().entries_per_tier[2], 1u);
  EXPECT_EQ(idx.stats().bytes_per_tier[2], 100u);
  EXPECT_EQ(idx.stats().entries_per_tier[0], 0u);
  EXPECT_EQ(idx.update(key(2), info()), KvStatus::kNotFound);
  EXPECT_EQ(idx.erase(key(1)), EraseOutcome::kErased);
  EXPECT_EQ(idx.find(key(1)), nullptr);
  EXPECT_EQ(idx.erase(key(1)), EraseOutcome::kNotFound);
  EXPECT_EQ(idx.size(), 0u);
}

TEST(KvIndex, BoundedCapacity) {
  ChunkIndex idx(100);
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_EQ(idx.insert(key(i), info()), KvStatus::kOk);
  EXPECT_EQ(idx.insert(key(100), info()), KvStatus::kRejected);
  EXPECT_EQ(idx.stats().rejected_full, 1u);
  ASSERT_EQ(idx.erase(key(5)), EraseOutcome::kErased);
  EXPECT_EQ(idx.insert(key(100), info()), KvStatus::kOk);
}

TEST(KvIndex, LongestPrefix) {
  ChunkIndex idx(64);
  std::vector<ChunkKey> keys;
  for (std::uint64_t i = 0; i < 6; ++i) keys.push_back(key(i));
  for (std::uint64_t i : {0, 1, 2, 4, 5}) ASSERT_EQ(idx.insert(keys[i], info(0, KvTier::kDram, i * 10)), KvStatus::kOk);
  std::vector<ChunkEntry> out;
  EXPECT_EQ(idx.lookup_prefix(keys, &out), 3u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].info.offset, 20u);
  EXPECT_EQ(idx.lookup_prefix(std::span(keys).subspan(4)), 2u);
  EXPECT_EQ(idx.lookup_prefix({}), 0u);
  EXPECT_EQ(idx.stats().lookup_hits, 5u);
  // A chunk still being written is not a hit.
  ChunkInfo w = info();
  w.flags = kChunkWriting;
  ASSERT_EQ(idx.insert(keys[3], w), KvStatus::kOk);
  EXPECT_EQ(idx.lookup_prefix(keys), 3u);
  w.flags = 0;
  ASSERT_EQ(idx.update(keys[3], w), KvStatus::kOk);
  EXPECT_EQ(idx.lookup_prefix(keys), 6u);
}

TEST(KvIndex, PinsBlockUpdateAndDeferErase) {
  ChunkIndex idx(16);
  ASSERT_EQ(idx.insert(key(1), info()), KvStatus::kOk);
  std::vector<ChunkKey> keys{key(1)};
  EXPECT_EQ(idx.pin_prefix(keys), 1u);
  EXPECT_EQ(*idx.pin(key(1)), 2u);
  EXPECT_TRUE(idx.is_pinned(key(1)));
  EXPECT_EQ(idx.update(key(1), info(0, KvTier::kCxl)), KvStatus::kBusy);
  EXPECT_EQ(idx.erase(key(1)), EraseOutcome::kDeferred);
  EXPECT_EQ(idx.find(key(1)), nullptr);  // doomed: invisible
  EXPECT_EQ(idx.lookup_prefix(keys), 0u);
  EXPECT_EQ(idx.pin(key(1)).status(), KvStatus::kNotFound);
  EXPECT_EQ(idx.stats().doomed, 1u);
  auto u1 = idx.unpin(key(1));
  ASSERT_TRUE(u1);
  EXPECT_FALSE(u1->erased);
  EXPECT_EQ(u1->pins_left, 1u);
  auto u2 = idx.unpin(key(1));
  ASSERT_TRUE(u2);
  EXPECT_TRUE(u2->erased);
  EXPECT_EQ(u2->entry.key, key(1));
  EXPECT_EQ(idx.size(), 0u);
  EXPECT_EQ(idx.stats().doomed, 0u);
  EXPECT_EQ(idx.stats().pins_outstanding, 0u);
  EXPECT_EQ(idx.unpin(key(1)).status(), KvStatus::kNotFound);
  ASSERT_EQ(idx.insert(key(2), info()), KvStatus::kOk);
  EXPECT_EQ(idx.unpin(key(2)).status(), KvStatus::kBadState);
}

TEST(KvIndex, PinPrefixPinsOnlyThePrefix) {
  ChunkIndex idx(16);
  std::vector<ChunkKey> keys{key(1), key(2), key(3)};
  ASSERT_EQ(idx.insert(key(1), info()), KvStatus::kOk);
  ASSERT_EQ(idx.insert(key(3), info()), KvStatus::kOk);
  std::vector<ChunkEntry> out;
  EXPECT_EQ(idx.pin_prefix(keys, &out), 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pins, 1u);
  EXPECT_TRUE(idx.is_pinned(key(1)));
  EXPECT_FALSE(idx.is_pinned(key(3)));
  EXPECT_EQ(idx.stats().pins_outstanding, 1u);
}

TEST(KvIndex, NamespaceDrop) {
  ChunkIndex idx(1000);
  for (std::uint64_t i = 0; i < 900; ++i) ASSERT_EQ(idx.insert(key(i), info(i % 3)), KvStatus::kOk);
  ASSERT_TRUE(idx.pin(key(1)));  // ns 1, leased
  auto dropped = idx.drop_namespace(1);
  EXPECT_EQ(dropped.size(), 299u);
  for (const auto& e : dropped) EXPECT_EQ(e.info.ns_id, 1u);
  for (std::uint64_t i = 0; i < 900; ++i) {
    if (i % 3 == 1) {
      EXPECT_EQ(idx.find(key(i)), nullptr) << i;
    } else {
      ASSERT_NE(idx.find(key(i)), nullptr) << i;
    }
  }
  EXPECT_EQ(idx.size(), 601u);  // 600 others + the doomed leased one
  auto u = idx.unpin(key(1));
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->erased);
  EXPECT_EQ(idx.size(), 600u);
}

// Randomized against std::unordered_map: exercises backward-shift deletion.
TEST(KvIndex, MatchesReferenceMapUnderChurn) {
  ChunkIndex idx(512);
  std::unordered_map<ChunkKey, std::uint64_t, ChunkKeyHash> ref;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 200000; ++step) {
    // Clustered low-entropy keys stress probe runs.
    const ChunkKey k{rng() % 700, 0};
    const int op = static_cast<int>(rng() % 3);
    if (op == 0) {
      const bool ok = idx.insert(k, info(0, KvTier::kDram, step)) == KvStatus::kOk;
      const bool ref_ok = !ref.contains(k) && ref.size() < 512;
      ASSERT_EQ(ok, ref_ok);
      if (ok) ref[k] = step;
    } else if (op == 1) {
      ASSERT_EQ(idx.erase(k) == EraseOutcome::kErased, ref.erase(k) == 1);
    } else {
      const ChunkEntry* e = idx.find(k);
      auto it = ref.find(k);
      ASSERT_EQ(e != nullptr, it != ref.end());
      if (e) {
        ASSERT_EQ(e->info.offset, it->second);
      }
    }
  }
  EXPECT_EQ(idx.size(), ref.size());
  std::size_t seen = 0;
  idx.for_each([&](const ChunkEntry&) { ++seen; });
  EXPECT_EQ(seen, ref.size());
}

}  // namespace
}  // namespace cxlpool::kvcache
