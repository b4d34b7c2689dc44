// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/hot_page_tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cxlpool/tiering/zipf.hpp"

namespace cxlpool::tiering {
namespace {

HotPageTracker make(std::uint32_t rows, std::uint32_t width, std::size_t k, bool cu = false) {
  auto t = HotPageTracker::create({{rows, width, cu, 5}, k});
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return std::move(*t);
}

TEST(HotPageTracker, RejectsBadConfig) {
  EXPECT_EQ(HotPageTracker::create({{4, 1024}, 0}).error().code, EINVAL);
  EXPECT_FALSE(HotPageTracker::create({{4, 1024}, HotPageTracker::kMaxTopK + 1}).has_value());
  EXPECT_FALSE(HotPageTracker::create({{4, 1000}, 16}).has_value());
}

TEST(HotPageTracker, ExactOnSmallInput) {
  auto t = make(4, 1u << 16, 3);
  for (int i = 0; i < 10; ++i) t.record(100);
  t.record(200, 7);
  t.record(300, 2);
  t.record(400, 1);
  EXPECT_EQ(t.hot_pages(), (std::vector<HotPage>{{100, 10}, {200, 7}, {300, 2}}));
}

TEST(HotPageTracker, RecallOfZipfTopK) {
  constexpr std::size_t kTop = 100;
  for (bool cu : {false, true}) {
    auto z = ZipfGenerator::create(100000, 1.0, 21);
    ASSERT_TRUE(z.has_value());
    auto t = make(4, 4096, kTop, cu);
    std::unordered_map<std::uint64_t, std::uint32_t> exact;
    for (int i = 0; i < 500000; ++i) {
      const std::uint64_t page = z->next_key();
      ++exact[page];
      t.record(page);
    }
    std::vector<std::pair<std::uint32_t, std::uint64_t>> by_count;
    for (const auto& [p, c] : exact) by_count.emplace_back(c, p);
    std::sort(by_count.begin(), by_count.end(), std::greater<>());
    std::unordered_set<std::uint64_t> truth;
    for (std::size_t i = 0; i < kTop; ++i) truth.insert(by_count[i].second);

    const auto hot = t.hot_pages();
    ASSERT_EQ(hot.size(), kTop);
    std::size_t hits = 0;
    for (std::size_t i = 0; i < hot.size(); ++i) {
      hits += truth.count(hot[i].key);
      ASSERT_GE(hot[i].count, exact[hot[i].key]);  // estimates never below truth
      if (i > 0) {
        ASSERT_GE(hot[i - 1].count, hot[i].count);
      }
    }
    const double recall = static_cast<double>(hits) / kTop;
    EXPECT_GE(recall, 0.9) << "conservative " << cu;
  }
}

TEST(HotPageTracker, EndEpochReturnsAndResets) {
  auto t = make(4, 1024, 4);
  t.record(1, 3);
  t.record(2, 5);
  const auto epoch = t.end_epoch();
  EXPECT_EQ(epoch, (std::vector<HotPage>{{2, 5}, {1, 3}}));
  EXPECT_TRUE(t.hot_pages().empty());
  EXPECT_EQ(t.estimate(2), 0u);
  EXPECT_EQ(t.sketch().total(), 0u);
  t.record(3);
  EXPECT_EQ(t.hot_pages(), (std::vector<HotPage>{{3, 1}}));
}

TEST(HotPageTracker, MemoryIncludesSketch) {
  auto t = make(4, 4096, 64);
  EXPECT_GE(t.memory_bytes(), 4u * 4096u * 4u);
}

}  // namespace
}  // namespace cxlpool::tiering
