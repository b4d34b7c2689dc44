// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/zipf.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace cxlpool::tiering {
namespace {

TEST(Zipf, RejectsBadConfig) {
  EXPECT_EQ(ZipfGenerator::create(0, 1.0, 1).error().code, EINVAL);
  EXPECT_FALSE(ZipfGenerator::create(10, -1.0, 1).has_value());
}

TEST(Zipf, DeterministicPerSeed) {
  auto a = ZipfGenerator::create(1000, 1.0, 9);
  auto b = ZipfGenerator::create(1000, 1.0, 9);
  auto c = ZipfGenerator::create(1000, 1.0, 10);
  int same_c = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto ka = a->next_key();
    ASSERT_EQ(ka, b->next_key());
    same_c += ka == c->next_key();
  }
  EXPECT_LT(same_c, 1000);
}

TEST(Zipf, FrequenciesFollowThePowerLaw) {
  // s = 1: P(rank 0) / P(rank 1) = 2, P(rank 0) / P(rank 3) = 4.
  auto z = ZipfGenerator::create(100, 1.0, 4);
  std::vector<int> hits(100);
  constexpr int kDraws = 400000;
  for (int i = 0; i < kDraws; ++i) ++hits[z->next_rank()];
  EXPECT_NEAR(static_cast<double>(hits[0]) / hits[1], 2.0, 0.1);
  EXPECT_NEAR(static_cast<double>(hits[0]) / hits[3], 4.0, 0.25);
  EXPECT_GT(hits[99], 0);
}

TEST(Zipf, KeysAreDistinctPerRank) {
  auto z = ZipfGenerator::create(5000, 1.0, 2);
  std::set<std::uint64_t> keys;
  for (std::size_t r = 0; r < 5000; ++r) keys.insert(z->key_of(r));
  EXPECT_EQ(keys.size(), 5000u);
}

TEST(Zipf, UniformWhenExponentIsZero) {
  auto z = ZipfGenerator::create(4, 0.0, 5);
  std::vector<int> hits(4);
  for (int i = 0; i < 40000; ++i) ++hits[z->next_rank()];
  for (int h : hits) EXPECT_NEAR(h, 10000, 500);
}

}  // namespace
}  // namespace cxlpool::tiering
