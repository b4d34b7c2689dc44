// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/zipf.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "cxlpool/tiering/mix.hpp"

namespace cxlpool::tiering {

Result<ZipfGenerator> ZipfGenerator::create(std::size_t items, double exponent, std::uint64_t seed) {
  if (items == 0 || items > kMaxItems) {
    return fail(EINVAL, "zipf: items " + std::to_string(items) + " not in 1.." + std::to_string(kMaxItems));
  }
  if (!(exponent >= 0)) return fail(EINVAL, "zipf: negative exponent");
  std::vector<double> cdf(items);
  double sum = 0;
  for (std::size_t r = 0; r < items; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), exponent);
    cdf[r] = sum;
  }
  for (double& c : cdf) c /= sum;
  cdf.back() = 1.0;
  return ZipfGenerator(std::move(cdf), seed);
}

std::size_t ZipfGenerator::next_rank() {
  // 53 random bits -> uniform in [0, 1); computed by hand so the stream is the
  // same with every standard library.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  return std::min(static_cast<std::size_t>(it - cdf_.begin()), cdf_.size() - 1);
}

std::uint64_t ZipfGenerator::key_of(std::size_t rank) const { return mix64(rank ^ mix64(salt_)); }

}  // namespace cxlpool::tiering
