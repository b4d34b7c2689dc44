// SPDX-License-Identifier: Apache-2.0
// Where the next I/O of one file goes: sequential (a position per direction,
// wrapping at the end of the region) or random over blocks of `unit` bytes
// (the smallest I/O size): a random map for one visit per block per pass, a
// plain uniform draw with norandommap, or zipf/pareto/normal. Skewed
// distributions draw every I/O independently, as with norandommap: a random
// map would flatten the skew once the hot blocks of a pass were done.
#pragma once

#include <cstdint>
#include <optional>

#include "../job/job_spec.hpp"
#include "block_distribution.hpp"
#include "random_map.hpp"
#include "rng.hpp"

namespace cxlpool::io {

class OffsetGenerator {
 public:
  // The region is [start, start + bytes) of the file; `unit` divides every
  // I/O size and `bytes` is rounded down to it.
  OffsetGenerator(const JobSpec& job, std::uint64_t start, std::uint64_t bytes, std::uint32_t unit,
                  std::uint64_t seed);

  struct Pick {
    std::uint64_t offset = 0;  // absolute, in the file
    std::uint32_t bytes = 0;   // may be less than asked at the end of the region or of a free run
  };
  // The next I/O of up to `bytes` for `direction`.
  Pick next(int direction, std::uint32_t bytes);

  std::uint64_t blocks() const { return blocks_; }
  std::uint32_t unit() const { return unit_; }
  // Passes over the region completed so far (wraps of the sequential
  // position or refills of the random map).
  std::uint64_t passes() const { return passes_; }

 private:
  bool random_;
  std::uint64_t start_;
  std::uint64_t blocks_;
  std::uint32_t unit_;
  std::uint64_t pos_[2] = {0, 0};  // sequential: next block per direction
  Rng rng_;
  std::optional<RandomMap> map_;
  std::optional<BlockDistribution> dist_;
  std::uint64_t passes_ = 0;
};

}  // namespace cxlpool::io
