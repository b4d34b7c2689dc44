// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/hot_word_tracker.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>

namespace cxlpool::tiering {
namespace {

constexpr std::uint64_t kPage = HotWordTracker::kPageBytes;

HotWordTracker make(std::size_t capacity = 64, std::uint32_t sparse_max = 16) {
  auto t = HotWordTracker::create({capacity, sparse_max});
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return std::move(*t);
}

TEST(HotWordTracker, RejectsBadConfig) {
  EXPECT_EQ(HotWordTracker::create({0, 16}).error().code, EINVAL);
  EXPECT_FALSE(HotWordTracker::create({HotWordTracker::kMaxCapacity + 1, 16}).has_value());
  EXPECT_FALSE(HotWordTracker::create({16, 65}).has_value());
  EXPECT_TRUE(HotWordTracker::create({1, 64}).has_value());
}

TEST(HotWordTracker, SingleWord) {
  auto t = make();
  t.record(7 * kPage + 5 * 64 + 3, 1);
  const auto p = t.find(7);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->words, 1ULL << 5);
  EXPECT_EQ(p->accesses, 1u);
  EXPECT_EQ(p->touched_words(), 1);
  EXPECT_FALSE(t.find(6).has_value());
}

TEST(HotWordTracker, AccessSpanningWords) {
  auto t = make();
  t.record(kPage + 60, 10);  // bytes 60..69: words 0 and 1
  EXPECT_EQ(t.find(1)->words, 0b11u);
  t.record(kPage + 2 * 64, 3 * 64);  // exactly words 2..4
  EXPECT_EQ(t.find(1)->words, 0b11111u);
  EXPECT_EQ(t.find(1)->accesses, 2u);
}

TEST(HotWordTracker, AccessSpanningPages) {
  auto t = make();
  t.record(2 * kPage - 64, 128);  // last word of page 1, first word of page 2
  EXPECT_EQ(t.find(1)->words, 1ULL << 63);
  EXPECT_EQ(t.find(2)->words, 1u);
  EXPECT_EQ(t.find(1)->accesses, 1u);
  EXPECT_EQ(t.find(2)->accesses, 1u);

  t.record(10 * kPage + 100, 3 * kPage);  // pages 10 (from word 1), 11, 12, 13 (to word 1)
  EXPECT_EQ(t.find(10)->words, ~0ULL << 1);
  EXPECT_EQ(t.find(11)->words, ~0ULL);
  EXPECT_EQ(t.find(12)->words, ~0ULL);
  EXPECT_EQ(t.find(13)->words, 0b11u);
  EXPECT_FALSE(t.find(14).has_value());
  EXPECT_EQ(t.size(), 6u);
}

TEST(HotWordTracker, ZeroBytesAndTopOfAddressSpace) {
  auto t = make();
  t.record(kPage, 0);
  EXPECT_EQ(t.size(), 0u);
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  t.record(top - 10, 100);  // clipped at the last byte
  const auto p = t.find(top >> HotWordTracker::kPageShift);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->words, 1ULL << 63);
  EXPECT_EQ(t.size(), 1u);
}

TEST(HotWordTracker, DenseOrSparse) {
  auto t = make();
  for (int w = 0; w < 16; ++w) t.record(3 * kPage + w * 128, 8);  // 16 words, spread out
  EXPECT_EQ(t.find(3)->touched_words(), 16);
  EXPECT_EQ(t.is_sparse(3), true);
  t.record(3 * kPage + 64, 1);  // 17th word
  EXPECT_EQ(t.is_sparse(3), false);
  EXPECT_FALSE(t.is_sparse(99).has_value());

  auto strict = make(64, 4);
  strict.record(0, 5 * 64);
  EXPECT_EQ(strict.is_sparse(0), false);
  strict.record(kPage, 4 * 64);
  EXPECT_EQ(strict.is_sparse(1), true);
}

TEST(HotWordTracker, EvictsColdestWhenFull) {
  auto t = make(4);
  const int accesses[] = {4, 1, 3, 2};
  for (std::uint64_t p = 0; p < 4; ++p) {
    for (int i = 0; i < accesses[p]; ++i) t.record(p * kPage + 64 * p, 8);
  }
  EXPECT_EQ(t.size(), 4u);
  t.record(10 * kPage, 8);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.evictions(), 1u);
  EXPECT_FALSE(t.find(1).has_value());
  ASSERT_TRUE(t.find(10).has_value());
  for (std::uint64_t p : {0, 2, 3}) {
    const auto e = t.find(p);
    ASSERT_TRUE(e.has_value()) << p;
    EXPECT_EQ(e->accesses, static_cast<std::uint64_t>(accesses[p]));
    EXPECT_EQ(e->words, 1ULL << p);
  }
  const auto all = t.pages();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].page, 0u);  // most accessed first
  EXPECT_EQ(all[3].page, 10u);
}

TEST(HotWordTracker, StaysConsistentUnderChurn) {
  auto t = make(64);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) t.record((rng() % 1000) * kPage + rng() % kPage, 1 + rng() % 300);
  ASSERT_EQ(t.size(), 64u);
  EXPECT_GT(t.evictions(), 0u);
  std::set<std::uint64_t> seen;
  for (const auto& p : t.pages()) {
    EXPECT_TRUE(seen.insert(p.page).second) << "page tracked twice";
    const auto f = t.find(p.page);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->words, p.words);
    EXPECT_NE(p.words, 0u);
  }
}

TEST(HotWordTracker, ResetForgetsPages) {
  auto t = make(8);
  t.record(0, 64);
  t.record(kPage, 64);
  t.reset();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.find(0).has_value());
  t.record(kPage, 1);
  EXPECT_EQ(t.find(1)->accesses, 1u);
}

}  // namespace
}  // namespace cxlpool::tiering
