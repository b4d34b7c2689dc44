// SPDX-License-Identifier: Apache-2.0
// Where the next I/O of one file goes: sequential (a position per direction,
// wrapping at the end of the region, moved by rw=read:-8k style skips) or
// random over blocks of `unit` bytes (the smallest I/O size): a random map
// for one visit per block per pass (also random_generator=lfsr's promise
// under norandommap), a plain uniform draw with norandommap, or
// zipf/pareto/normal/zoned. Skewed distributions draw every I/O
// independently, as with norandommap: a random map would flatten the skew
// once the hot blocks of a pass were done. randread:N issues N-1 sequential
// I/Os after each random one; blockalign rounds random offsets down.
// zonemode=strided confines I/O to one zone of zonerange bytes until
// zonesize bytes are done, then moves zonerange + zoneskip further on
// (wrapping), drawing random offsets independently within the zone.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

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
  std::uint64_t pick_random_block();
  // zonemode=strided: moves to the next zone once zonesize is done.
  void account_zone(std::uint64_t count);

  std::uint64_t pos_[2] = {0, 0};  // sequential: next block per direction
  std::int64_t skip_blocks_ = 0;   // rw=read:-8k, in units
  std::uint32_t random_run_ = 1;   // randread:8
  std::uint32_t run_left_[2] = {0, 0};
  std::uint64_t run_next_[2] = {0, 0};
  std::uint64_t align_units_ = 1;  // blockalign, in units
  struct Zone {
    double cumulative = 0;  // access fraction up to and including this zone
    std::uint64_t first = 0, count = 1;
  };
  std::vector<Zone> zones_;
  // zonemode=strided, in units: the zone I/O goes to now and how much of
  // zonesize it has had.
  bool strided_ = false;
  std::uint64_t zone_start_ = 0, zone_range_ = 0, zone_size_ = 0, zone_step_ = 0, zone_done_ = 0;
  Rng rng_;
  std::optional<RandomMap> map_;
  std::optional<BlockDistribution> dist_;
  std::uint64_t passes_ = 0;
};

}  // namespace cxlpool::io
