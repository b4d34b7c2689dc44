// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/lru.hpp"

#include <gtest/gtest.h>

#include <set>

namespace cxlpool::kvcache {
namespace {

ChunkKey key(std::uint64_t i) { return ChunkKey{0, i}; }
const PinnedFn kNone = [](const ChunkKey&) { return false; };

TEST(KvLru, EvictsLeastRecentlyUsed) {
  LruPolicy p;
  for (std::uint64_t i = 0; i < 5; ++i) p.insert(key(i));
  p.touch(key(0));
  p.touch(key(2));
  std::vector<std::uint64_t> order;
  while (auto v = p.choose_victim(kNone)) order.push_back(v->lo);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 3, 4, 0, 2}));
  EXPECT_EQ(p.size(), 0u);
  EXPECT_EQ(p.stats().evictions, 5u);
}

TEST(KvLru, ReinsertIsATouchAndRemoveWorks) {
  LruPolicy p;
  p.insert(key(1));
  p.insert(key(2));
  p.insert(key(1));
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ(p.choose_victim(kNone)->lo, 2u);
  EXPECT_TRUE(p.remove(key(1)));
  EXPECT_FALSE(p.remove(key(1)));
  EXPECT_FALSE(p.choose_victim(kNone));
  p.touch(key(9));  // unknown: ignored
  EXPECT_EQ(p.size(), 0u);
}

TEST(KvLru, NeverReturnsPinned) {
  LruPolicy p;
  for (std::uint64_t i = 0; i < 4; ++i) p.insert(key(i));
  std::set<std::uint64_t> pinned{0, 1};
  PinnedFn is_pinned = [&](const ChunkKey& k) { return pinned.contains(k.lo); };
  EXPECT_EQ(p.choose_victim(is_pinned)->lo, 2u);
  EXPECT_EQ(p.choose_victim(is_pinned)->lo, 3u);
  EXPECT_FALSE(p.choose_victim(is_pinned));  // only pinned left
  EXPECT_EQ(p.size(), 2u);
  pinned.erase(1);
  EXPECT_EQ(p.choose_victim(is_pinned)->lo, 1u);
  EXPECT_GE(p.stats().pinned_skips, 4u);
}

TEST(KvEvictionFactory, ParsesAndBuilds) {
  EXPECT_EQ(*parse_eviction_kind("lru"), EvictionKind::kLru);
  EXPECT_EQ(*parse_eviction_kind("s3fifo"), EvictionKind::kS3Fifo);
  EXPECT_EQ(parse_eviction_kind("arc").error().code, EINVAL);
  EXPECT_EQ(make_eviction_policy(EvictionKind::kLru)->name(), "lru");
  EXPECT_EQ(make_eviction_policy(EvictionKind::kS3Fifo)->name(), "s3fifo");
}

}  // namespace
}  // namespace cxlpool::kvcache
