// SPDX-License-Identifier: Apache-2.0
#include "offset_generator.hpp"

#include <algorithm>

namespace cxlpool::io {

OffsetGenerator::OffsetGenerator(const JobSpec& job, std::uint64_t start, std::uint64_t bytes,
                                 std::uint32_t unit, std::uint64_t seed)
    : random_(job.rw == RwMode::kRandRead || job.rw == RwMode::kRandWrite || job.rw == RwMode::kRandReadWrite), start_(start), blocks_(unit ? bytes / unit : 0), unit_(unit), rng_(seed) {
  if (blocks_ == 0) blocks_ = 1;  // callers refuse regions smaller than one I/O
  if (!random_) return;
  if (job.random_distribution != Distribution::kRandom)
    dist_.emplace(job.random_distribution, job.distribution_param, blocks_, seed ^ 0x5bd1e995ull);
  else if (!job.norandommap)
    map_.emplace(blocks_);
}

OffsetGenerator::Pick OffsetGenerator::next(int d, std::uint32_t bytes) {
  const std::uint64_t want = std::max<std::uint64_t>(1, (bytes + unit_ - 1) / unit_);
  std::uint64_t block = 0, count = want;
  if (!random_) {
    if (pos_[d] >= blocks_) {
      pos_[d] = 0;
      ++passes_;
    }
    block = pos_[d];
    count = std::min(want, blocks_ - block);
    pos_[d] = block + count;
  } else if (map_) {
    if (map_->full()) {
      map_->clear();
      ++passes_;
    }
    block = map_->next_free(rng_.below(blocks_));
    count = map_->mark_run(block, want);
  } else {
    block = dist_ ? dist_->next() : rng_.below(blocks_);
    count = std::min(want, blocks_ - block);
  }
  const std::uint64_t got = count * unit_;
  return {start_ + block * unit_, static_cast<std::uint32_t>(std::min<std::uint64_t>(got, bytes))};
}

}  // namespace cxlpool::io
