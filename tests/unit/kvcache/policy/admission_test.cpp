// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/admission.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace cxlpool::kvcache {
namespace {

ChunkKey key(std::uint64_t i) { return ChunkKey{i * 31, i}; }

TEST(KvAdmission, ThresholdTwoByDefault) {
  AdmissionFilter f;
  EXPECT_FALSE(f.admit(key(1)));
  f.record(key(1));
  EXPECT_FALSE(f.admit(key(1)));
  f.record(key(1));
  EXPECT_TRUE(f.admit(key(1)));
  EXPECT_EQ(f.stats().admitted, 1u);
  EXPECT_EQ(f.stats().rejected, 2u);
  EXPECT_EQ(f.memory_bytes(), 4u * 65536u);
}

TEST(KvAdmission, ConfigurableThreshold) {
  AdmissionConfig cfg;
  cfg.threshold = 4;
  AdmissionFilter f(cfg);
  for (int i = 0; i < 3; ++i) f.record(key(7));
  EXPECT_FALSE(f.admit(key(7)));
  f.record(key(7));
  EXPECT_TRUE(f.admit(key(7)));
  cfg.threshold = 1;
  AdmissionFilter once(cfg);
  EXPECT_TRUE(once.admit(key(7)));
}

TEST(KvAdmission, NoFalseRejectsWithoutHalving) {
  AdmissionConfig cfg;
  cfg.width = 1024;
  cfg.halve_every = ~0ULL;
  AdmissionFilter f(cfg);
  for (std::uint64_t i = 0; i < 5000; ++i) {
    f.record(key(i));
    f.record(key(i));
  }
  for (std::uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(f.admit(key(i))) << i;
}

// Measures the false-admit rate (documented in admission.hpp): keys seen once
// among a population of keys seen twice.
TEST(KvAdmission, FalseAdmitRateIsSmall) {
  AdmissionConfig cfg;  // defaults: 4 x 65536
  cfg.halve_every = ~0ULL;
  AdmissionFilter f(cfg);
  const std::uint64_t twice = 8192, once = 8192;
  for (std::uint64_t i = 0; i < twice; ++i) {
    f.record(key(i));
    f.record(key(i));
  }
  for (std::uint64_t i = 0; i < once; ++i) f.record(key(1'000'000 + i));
  std::uint64_t false_admits = 0;
  for (std::uint64_t i = 0; i < once; ++i) false_admits += f.admit(key(1'000'000 + i)) ? 1 : 0;
  const double rate = static_cast<double>(false_admits) / static_cast<double>(once);
  std::printf("false admits: %llu of %llu (%.5f) with %llu distinct keys in 4x65536\n",
              static_cast<unsigned long long>(false_admits), static_cast<unsigned long long>(once), rate,
              static_cast<unsigned long long>(twice + once));
  EXPECT_LT(rate, 0.01);
}

TEST(KvAdmission, HalvingAgesOutOldSightings) {
  AdmissionConfig cfg;
  cfg.width = 64;
  cfg.halve_every = 100;
  AdmissionFilter f(cfg);
  f.record(key(1));
  f.record(key(1));
  EXPECT_TRUE(f.admit(key(1)));
  for (std::uint64_t i = 0; i < 200; ++i) f.record(key(1000 + (i % 3)));  // two halvings
  EXPECT_EQ(f.stats().halvings, 2u);
  EXPECT_LT(f.estimate(key(1)), 2u);
  EXPECT_FALSE(f.admit(key(1)));
}

TEST(KvAdmission, CountersSaturate) {
  AdmissionConfig cfg;
  cfg.halve_every = ~0ULL;
  AdmissionFilter f(cfg);
  for (int i = 0; i < 1000; ++i) f.record(key(3));
  EXPECT_EQ(f.estimate(key(3)), 255u);
}

}  // namespace
}  // namespace cxlpool::kvcache
