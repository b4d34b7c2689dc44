// SPDX-License-Identifier: Apache-2.0
#include "alias_sampler.hpp"

#include <cmath>

namespace cxlpool::tiering::workload_detail {

AliasSampler::AliasSampler(std::span<const double> weights) : size_(weights.size()), cells_(weights.size()) {
  double sum = 0;
  for (const double w : weights) sum += w;
  // Scaled so the mean is 1; columns below 1 borrow from columns above.
  std::vector<double> scaled(weights.size());
  std::vector<std::uint32_t> small, large;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    scaled[i] = weights[i] * static_cast<double>(weights.size()) / sum;
    (scaled[i] < 1 ? small : large).push_back(static_cast<std::uint32_t>(i));
  }
  const auto threshold = [](double p) {
    return p >= 1 ? 0xffffffffu : static_cast<std::uint32_t>(p * 4294967296.0);
  };
  while (!small.empty() && !large.empty()) {
    const std::uint32_t s = small.back();
    small.pop_back();
    const std::uint32_t l = large.back();
    cells_[s] = {threshold(scaled[s]), l};
    scaled[l] -= 1 - scaled[s];
    if (scaled[l] < 1) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // Leftovers are 1 up to rounding: keep their own column.
  for (const std::uint32_t i : large) cells_[i] = {0xffffffffu, i};
  for (const std::uint32_t i : small) cells_[i] = {0xffffffffu, i};
}

AliasSampler AliasSampler::zipf(std::uint64_t n, double exponent) {
  std::vector<double> w(n);
  for (std::uint64_t r = 0; r < n; ++r) w[r] = 1.0 / std::pow(static_cast<double>(r + 1), exponent);
  return AliasSampler(w);
}

}  // namespace cxlpool::tiering::workload_detail
