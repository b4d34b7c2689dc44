// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/top_k.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <vector>

namespace cxlpool::tiering {
namespace {

TEST(TopK, KeepsHighestAndSortsDescending) {
  TopK t(3);
  t.offer(1, 5);
  t.offer(2, 1);
  t.offer(3, 9);
  EXPECT_EQ(t.threshold(), 1u);
  t.offer(4, 7);  // evicts key 2
  EXPECT_FALSE(t.contains(2));
  t.offer(5, 5);  // not above the minimum (5): ignored
  EXPECT_FALSE(t.contains(5));
  EXPECT_EQ(t.sorted(), (std::vector<KeyCount>{{3, 9}, {4, 7}, {1, 5}}));
  t.offer(1, 10);  // member grows
  EXPECT_EQ(t.sorted(), (std::vector<KeyCount>{{1, 10}, {3, 9}, {4, 7}}));
  EXPECT_EQ(t.threshold(), 7u);
}

TEST(TopK, NotFullHasZeroThresholdAndTiesByKey) {
  TopK t(4);
  t.offer(9, 2);
  t.offer(3, 2);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.threshold(), 0u);
  EXPECT_EQ(t.sorted(), (std::vector<KeyCount>{{3, 2}, {9, 2}}));
}

TEST(TopK, ZeroCapacityTracksNothing) {
  TopK t(0);
  t.offer(1, 100);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(t.sorted().empty());
}

TEST(TopK, MatchesExactTopKOfMonotoneCounts) {
  std::mt19937_64 rng(11);
  for (std::size_t k : {1u, 5u, 32u}) {
    TopK t(k);
    std::map<std::uint64_t, std::uint32_t> counts;
    for (int i = 0; i < 50000; ++i) {
      // Skewed key choice so the top set changes over time.
      const std::uint64_t key = (rng() % 300) * (rng() % 3 == 0 ? 1 : 0) + rng() % 40;
      counts[key] += 1 + static_cast<std::uint32_t>(rng() % 4);
      t.offer(key, counts[key]);
    }
    std::vector<std::uint32_t> want;
    for (const auto& [key, c] : counts) want.push_back(c);
    std::sort(want.begin(), want.end(), std::greater<>());
    want.resize(std::min(k, want.size()));
    std::vector<std::uint32_t> got;
    for (const auto& e : t.sorted()) {
      got.push_back(e.count);
      ASSERT_EQ(counts[e.key], e.count) << "stale count for key " << e.key;
    }
    EXPECT_EQ(got, want) << "k " << k;  // counts compared so ties may pick either key
  }
}

TEST(TopK, ClearStartsOver) {
  TopK t(2);
  t.offer(1, 5);
  t.offer(2, 6);
  t.clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.contains(1));
  t.offer(3, 1);
  EXPECT_EQ(t.sorted(), (std::vector<KeyCount>{{3, 1}}));
}

}  // namespace
}  // namespace cxlpool::tiering
