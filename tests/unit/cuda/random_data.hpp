// SPDX-License-Identifier: Apache-2.0
// Seeded inputs for the kernel and reference tests: the same seed gives the
// same data on every run and machine (std::mt19937 is fully specified).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace cxlpool::cuda::test {

inline std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(gen());
  return out;
}

// n floats uniform in [-limit, limit).
inline std::vector<float> random_floats(size_t n, uint32_t seed, float limit = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-limit, limit);
  std::vector<float> out(n);
  for (auto& f : out) f = dist(gen);
  return out;
}

}  // namespace cxlpool::cuda::test
