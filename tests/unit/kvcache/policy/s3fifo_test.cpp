// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/s3fifo.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "cxlpool/kvcache/lru.hpp"

namespace cxlpool::kvcache {
namespace {

ChunkKey key(std::uint64_t i) { return ChunkKey{0, i}; }
const PinnedFn kNone = [](const ChunkKey&) { return false; };

// A cache of `capacity` chunks driven by a policy: evict until there is room.
struct Cache {
  EvictionPolicy& p;
  std::size_t capacity;
  std::uint64_t hits = 0, misses = 0;
  std::set<std::uint64_t> resident;
  void access(std::uint64_t i) {
    if (resident.contains(i)) {
      ++hits;
      p.touch(key(i));
      return;
    }
    ++misses;
    while (resident.size() >= capacity) {
      auto v = p.choose_victim(kNone);
      ASSERT_TRUE(v);
      resident.erase(v->lo);
    }
    p.insert(key(i));
    resident.insert(i);
  }
};

TEST(KvS3Fifo, NewChunksGoToSmall) {
  S3FifoPolicy p;
  p.insert(key(1));
  EXPECT_TRUE(p.in_small(key(1)));
  EXPECT_FALSE(p.in_main(key(1)));
}

TEST(KvS3Fifo, OneHitWondersLeaveFromSmallIntoGhost) {
  S3FifoPolicy p;
  for (std::uint64_t i = 0; i < 10; ++i) p.insert(key(i));
  // Nothing was hit: the oldest small entry goes, its key into the ghost.
  auto v = p.choose_victim(kNone);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->lo, 0u);
  EXPECT_TRUE(p.in_ghost(key(0)));
  EXPECT_EQ(p.s3_stats().evicted_small, 1u);
  EXPECT_EQ(p.s3_stats().evicted_main, 0u);
}

TEST(KvS3Fifo, HitInSmallMovesToMainAndSurvives) {
  S3FifoPolicy p;
  for (std::uint64_t i = 0; i < 10; ++i) p.insert(key(i));
  p.touch(key(0));
  auto v = p.choose_victim(kNone);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->lo, 1u);  // 0 was hit: moved to main instead
  EXPECT_TRUE(p.in_main(key(0)));
  EXPECT_EQ(p.s3_stats().moved_to_main, 1u);
}

TEST(KvS3Fifo, GhostHitGoesToMain) {
  S3FifoPolicy p;
  for (std::uint64_t i = 0; i < 10; ++i) p.insert(key(i));
  ASSERT_EQ(p.choose_victim(kNone)->lo, 0u);
  ASSERT_TRUE(p.in_ghost(key(0)));
  p.insert(key(0));
  EXPECT_TRUE(p.in_main(key(0)));
  EXPECT_FALSE(p.in_ghost(key(0)));
  EXPECT_EQ(p.s3_stats().ghost_hits, 1u);
}

TEST(KvS3Fifo, MainReinsertsHotAndFrequencyIsCapped) {
  S3FifoConfig cfg;
  cfg.small_ratio = 0.0;  // target of 1: small is used only when it has one
  S3FifoPolicy p(cfg);
  // Put 0..3 into main through the ghost.
  for (std::uint64_t i = 0; i < 4; ++i) {
    p.insert(key(i));
    ASSERT_EQ(p.choose_victim(kNone)->lo, i);
    p.insert(key(i));
    ASSERT_TRUE(p.in_main(key(i)));
  }
  for (int n = 0; n < 10; ++n) p.touch(key(0));  // capped at 3
  p.touch(key(1));
  // Main tail is 0 (oldest). 0 is reinserted 3 times before it can go, 1 once.
  std::vector<std::uint64_t> order;
  while (auto v = p.choose_victim(kNone)) order.push_back(v->lo);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{2, 3, 1, 0}));
  EXPECT_EQ(p.s3_stats().reinserted, 4u);  // 0 three times (3, 2, 1), 1 once
}

TEST(KvS3Fifo, NeverReturnsPinnedAndStopsWhenAllPinned) {
  S3FifoPolicy p;
  for (std::uint64_t i = 0; i < 20; ++i) p.insert(key(i));
  for (std::uint64_t i = 0; i < 20; i += 2) p.touch(key(i));  // evens move to main later
  std::set<std::uint64_t> pinned{1, 3, 4, 6};
  PinnedFn is_pinned = [&](const ChunkKey& k) { return pinned.contains(k.lo); };
  std::set<std::uint64_t> evicted;
  while (auto v = p.choose_victim(is_pinned)) {
    EXPECT_FALSE(pinned.contains(v->lo)) << v->lo;
    evicted.insert(v->lo);
  }
  EXPECT_EQ(evicted.size(), 16u);
  EXPECT_EQ(p.size(), 4u);
  pinned.clear();
  EXPECT_TRUE(p.choose_victim(is_pinned));
}

TEST(KvS3Fifo, RemoveAndSizes) {
  S3FifoPolicy p;
  p.insert(key(1));
  p.insert(key(2));
  EXPECT_TRUE(p.remove(key(1)));
  EXPECT_FALSE(p.remove(key(1)));
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.small_size() + p.main_size(), 1u);
}

TEST(KvS3Fifo, GhostIsBounded) {
  S3FifoConfig cfg;
  cfg.ghost_capacity = 8;
  S3FifoPolicy p(cfg);
  Cache c{p, 16};
  for (std::uint64_t i = 0; i < 1000; ++i) c.access(i);  // a pure scan
  EXPECT_LE(p.ghost_size(), 8u);
}

// A hot set plus a scan of one-hit wonders: S3-FIFO keeps the hot set, LRU
// lets the scan flush it.
TEST(KvS3Fifo, ScanResistantWhereLruIsNot) {
  S3FifoPolicy s3;
  LruPolicy lru;
  Cache a{s3, 100}, b{lru, 100};
  std::mt19937_64 rng(1);
  std::uint64_t scan = 1'000'000;
  for (int step = 0; step < 200000; ++step) {
    const std::uint64_t i = (step % 2 == 0) ? rng() % 50 : scan++;
    a.access(i);
    b.access(i);
  }
  const double hr_s3 = static_cast<double>(a.hits) / static_cast<double>(a.hits + a.misses);
  const double hr_lru = static_cast<double>(b.hits) / static_cast<double>(b.hits + b.misses);
  std::printf("hit rate: s3fifo %.3f lru %.3f\n", hr_s3, hr_lru);
  EXPECT_GT(hr_s3, 0.45);  // the 50 hot chunks stay: almost every hot access hits
  EXPECT_GT(hr_s3, hr_lru + 0.05);
}

}  // namespace
}  // namespace cxlpool::kvcache
