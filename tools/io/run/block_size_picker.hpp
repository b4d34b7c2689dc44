// SPDX-License-Identifier: Apache-2.0
// The size of each I/O of one direction: fixed bs, a bsrange (uniform,
// in multiples of the smallest size), or a bssplit (weighted choice; shares
// given as 0 split what the others leave, as fio does).
#pragma once

#include <cstdint>
#include <vector>

#include "../job/job_spec.hpp"
#include "cxlpool/common/result.hpp"
#include "rng.hpp"

namespace cxlpool::io {

class BlockSizePicker {
 public:
  // `align`: every size is a multiple of it (the device's DIO alignment).
  static Result<BlockSizePicker> make(const JobSpec& job, int direction, std::uint32_t align);

  std::uint32_t pick(Rng& rng) const;
  std::uint32_t min() const { return min_; }
  std::uint32_t max() const { return max_; }
  bool fixed() const { return min_ == max_; }

  struct Share {
    std::uint32_t bytes;
    std::uint32_t cumulative;  // out of kScale
  };
  static constexpr std::uint32_t kScale = 10000;
  const std::vector<Share>& shares() const { return shares_; }

 private:
  std::uint32_t min_ = 0, max_ = 0;
  std::uint32_t step_ = 0;       // bsrange granularity
  std::vector<Share> shares_;    // bssplit
};

}  // namespace cxlpool::io
