// SPDX-License-Identifier: Apache-2.0
// Seeded Zipf key stream: rank r (0-based) is drawn with probability
// proportional to 1 / (r + 1)^s. Used to drive and evaluate the trackers with
// the skewed page popularity seen in real workloads. Deterministic for a seed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::tiering {

class ZipfGenerator {
 public:
  // EINVAL: items == 0, items > kMaxItems, or exponent < 0.
  static Result<ZipfGenerator> create(std::size_t items, double exponent, std::uint64_t seed);
  static constexpr std::size_t kMaxItems = 1u << 26;

  // Next rank, 0 = most popular.
  std::size_t next_rank();
  // Next rank mapped to a scattered 64-bit key (a bijection of the rank),
  // so popular keys are not numerically adjacent.
  std::uint64_t next_key() { return key_of(next_rank()); }
  std::uint64_t key_of(std::size_t rank) const;

  std::size_t items() const { return cdf_.size(); }

 private:
  ZipfGenerator(std::vector<double> cdf, std::uint64_t seed) : cdf_(std::move(cdf)), rng_(seed), salt_(seed) {}

  std::vector<double> cdf_;  // cumulative probabilities, last == 1
  std::mt19937_64 rng_;
  std::uint64_t salt_;
};

}  // namespace cxlpool::tiering
