// SPDX-License-Identifier: Apache-2.0
// Which block a random I/O touches: uniform, or skewed like fio's
// random_distribution (zipf:theta, pareto:h, normal:dev). A skewed draw first
// yields a popularity rank (0 = hottest; for normal, distance from the centre
// of the range is what is rare) and then scatters the rank over the range
// with a fixed bijection, so hot blocks are spread over the file the way
// fio's hashing spreads them rather than packed at its start.
#pragma once

#include <cstdint>

#include "../job/job_spec.hpp"
#include "rng.hpp"

namespace cxlpool::io {

class BlockDistribution {
 public:
  // `param`: zipf theta (> 0, != 1), pareto h (0 < h < 1), normal standard
  // deviation in percent of the range (> 0). `blocks` > 0.
  BlockDistribution(Distribution kind, double param, std::uint64_t blocks, std::uint64_t seed);

  Distribution kind() const { return kind_; }
  std::uint64_t blocks() const { return blocks_; }

  // A rank in [0, blocks) with the distribution's shape, before scattering.
  std::uint64_t next_rank();
  // The block a rank maps to: a bijection of [0, blocks).
  std::uint64_t scatter(std::uint64_t rank) const;
  std::uint64_t next() { return kind_ == Distribution::kRandom ? rng_.below(blocks_) : scatter(next_rank()); }

  // The zipf normaliser over `n` ranks (sum of 1/i^theta), as used by the
  // generator; exposed for tests of the shape.
  static double zeta(std::uint64_t n, double theta);

 private:
  std::uint64_t next_zipf();
  std::uint64_t next_pareto();
  std::uint64_t next_normal();

  Distribution kind_;
  double param_;
  std::uint64_t blocks_;
  Rng rng_;
  std::uint64_t stride_ = 1;  // coprime with blocks_: rank -> (rank * stride + shift) % blocks
  std::uint64_t shift_ = 0;
  // zipf (Gray et al., "Quickly generating billion-record synthetic databases")
  double zetan_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
  // pareto
  double pareto_pow_ = 0;
  // normal: Box-Muller's second value, kept for the next call
  bool have_spare_ = false;
  double spare_ = 0;
};

}  // namespace cxlpool::io
