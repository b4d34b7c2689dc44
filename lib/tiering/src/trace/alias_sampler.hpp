// SPDX-License-Identifier: Apache-2.0
// O(1) sampling from a fixed discrete distribution (Walker's alias method,
// Vose's construction). The workload generators draw millions of Zipf ranks
// over up to 2^26 items; a binary search over the CDF costs a cache miss per
// level, one alias-table lookup costs one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "workload_generators.hpp"

namespace cxlpool::tiering::workload_detail {

class AliasSampler {
 public:
  // weights: non-negative, at least one positive.
  explicit AliasSampler(std::span<const double> weights);
  // Zipf(s) over n items: rank r with weight 1 / (r + 1)^s.
  static AliasSampler zipf(std::uint64_t n, double exponent);

  std::uint32_t sample(Rng& rng) const {
    const std::uint64_t u = rng.next();
    // High bits pick the column, low 32 bits decide column or alias.
    const auto column = static_cast<std::uint32_t>(((u >> 32) * size_) >> 32);
    const Cell& c = cells_[column];
    return static_cast<std::uint32_t>(u) < c.threshold ? column : c.alias;
  }
  std::uint32_t size() const { return static_cast<std::uint32_t>(size_); }

 private:
  struct Cell {
    std::uint32_t threshold;  // P(keep column) * 2^32, saturated
    std::uint32_t alias;
  };
  std::uint64_t size_ = 0;
  std::vector<Cell> cells_;
};

}  // namespace cxlpool::tiering::workload_detail
