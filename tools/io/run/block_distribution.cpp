// SPDX-License-Identifier: Apache-2.0
#include "block_distribution.hpp"

#include <cmath>
#include <numeric>

namespace cxlpool::io {
namespace {

// fio stops summing the zipf series there too: beyond, the tail's share is
// negligible next to the time a larger sum takes at start-up.
constexpr std::uint64_t kZetaTermsCap = 10'000'000;

constexpr std::uint64_t kStrideSeed = 0x9e3779b97f4a7c15ull;

}  // namespace

double BlockDistribution::zeta(std::uint64_t n, double theta) {
  double sum = 0;
  const std::uint64_t terms = n < kZetaTermsCap ? n : kZetaTermsCap;
  for (std::uint64_t i = 1; i <= terms; ++i) sum += std::pow(static_cast<double>(i), -theta);
  return sum;
}

BlockDistribution::BlockDistribution(Distribution kind, double param, std::uint64_t blocks,
                                     std::uint64_t seed)
    : kind_(kind), param_(param), blocks_(blocks == 0 ? 1 : blocks), rng_(seed) {
  // A stride coprime with the block count makes rank -> block a bijection,
  // so scattering never merges two ranks into one block.
  std::uint64_t s = (kStrideSeed ^ seed) % blocks_;
  if (s == 0) s = 1;
  while (std::gcd(s, blocks_) != 1) s = s + 1 == blocks_ ? 1 : s + 1;
  stride_ = s;
  shift_ = (seed >> 17) % blocks_;

  const double n = static_cast<double>(blocks_);
  switch (kind_) {
    case Distribution::kZipf: {
      const double theta = param_;
      zetan_ = zeta(blocks_, theta);
      const double zeta2 = zeta(2, theta);
      alpha_ = 1.0 / (1.0 - theta);
      eta_ = (1.0 - std::pow(2.0 / n, 1.0 - theta)) / (1.0 - zeta2 / zetan_);
      half_pow_theta_ = std::pow(0.5, theta);
      break;
    }
    case Distribution::kPareto:
      // A fraction h of the blocks takes 1-h of the accesses.
      pareto_pow_ = std::log(param_) / std::log(1.0 - param_);
      break;
    default: break;
  }
}

std::uint64_t BlockDistribution::scatter(std::uint64_t rank) const {
  return static_cast<std::uint64_t>(
      (static_cast<unsigned __int128>(rank) * stride_ + shift_) % blocks_);
}

std::uint64_t BlockDistribution::next_rank() {
  switch (kind_) {
    case Distribution::kZipf: return next_zipf();
    case Distribution::kPareto: return next_pareto();
    case Distribution::kNormal: return next_normal();
    case Distribution::kRandom:
    case Distribution::kZoned: break;  // zoned picks its block in OffsetGenerator
  }
  return rng_.below(blocks_);
}

std::uint64_t BlockDistribution::next_zipf() {
  if (blocks_ == 1) return 0;
  const double u = rng_.uniform();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + half_pow_theta_) return 1;
  const double v = static_cast<double>(blocks_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  const auto r = static_cast<std::uint64_t>(v);
  return r >= blocks_ ? blocks_ - 1 : r;
}

std::uint64_t BlockDistribution::next_pareto() {
  const double u = rng_.uniform();
  const auto r = static_cast<std::uint64_t>(static_cast<double>(blocks_) * std::pow(u, pareto_pow_));
  return r >= blocks_ ? blocks_ - 1 : r;
}

std::uint64_t BlockDistribution::next_normal() {
  // Centred on the middle of the range; draws outside it are drawn again.
  const double sigma = static_cast<double>(blocks_) * param_ / 100.0;
  const double centre = static_cast<double>(blocks_) / 2.0;
  for (;;) {
    double z;
    if (have_spare_) {
      z = spare_;
      have_spare_ = false;
    } else {
      double u1 = rng_.uniform();
      if (u1 <= 0) u1 = 0x1.0p-53;
      const double u2 = rng_.uniform();
      const double radius = std::sqrt(-2.0 * std::log(u1));
      z = radius * std::cos(2 * M_PI * u2);
      spare_ = radius * std::sin(2 * M_PI * u2);
      have_spare_ = true;
    }
    const double x = std::floor(centre + z * sigma);
    if (x >= 0 && x < static_cast<double>(blocks_)) return static_cast<std::uint64_t>(x);
  }
}

}  // namespace cxlpool::io
