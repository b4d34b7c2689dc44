// SPDX-License-Identifier: Apache-2.0
#include "offset_generator.hpp"

#include <algorithm>
#include <cmath>

namespace cxlpool::io {

OffsetGenerator::OffsetGenerator(const JobSpec& job, std::uint64_t start, std::uint64_t bytes,
                                 std::uint32_t unit, std::uint64_t seed)
    : random_(is_random(job.rw)), start_(start), blocks_(unit ? bytes / unit : 0), unit_(unit), rng_(seed) {
  if (blocks_ == 0) blocks_ = 1;  // callers refuse regions smaller than one I/O
  if (unit_ != 0) {
    // Callers check that skips and alignments are whole units.
    skip_blocks_ = job.seq_skip / static_cast<std::int64_t>(unit_);
    if (job.blockalign > unit_) align_units_ = job.blockalign / unit_;
  }
  random_run_ = std::max<std::uint32_t>(1, job.random_run);
  if (job.zone_strided && unit_ != 0) {
    strided_ = true;
    zone_range_ = std::clamp<std::uint64_t>((job.zonerange ? job.zonerange : job.zonesize) / unit_, 1, blocks_);
    zone_size_ = std::max<std::uint64_t>(1, job.zonesize / unit_);
    zone_step_ = zone_range_ + job.zoneskip / unit_;
  }
  if (!random_) return;
  if (strided_) return;  // independent draws within the current zone
  if (job.random_distribution == Distribution::kZoned) {
    double cumulative = 0, range_done = 0;
    for (const AccessZone& z : job.zones) {
      Zone zone;
      cumulative += z.access_percent / 100.0;
      zone.cumulative = cumulative;
      zone.first = std::min(blocks_ - 1, static_cast<std::uint64_t>(std::floor(range_done / 100.0 * blocks_)));
      range_done += z.range_percent;
      const auto end = std::min(blocks_, static_cast<std::uint64_t>(std::floor(range_done / 100.0 * blocks_)));
      zone.count = end > zone.first ? end - zone.first : 1;
      zones_.push_back(zone);
    }
  } else if (job.random_distribution != Distribution::kRandom) {
    dist_.emplace(job.random_distribution, job.distribution_param, blocks_, seed ^ 0x5bd1e995ull);
  } else if (!job.norandommap || job.random_generator == RandomGenerator::kLfsr) {
    map_.emplace(blocks_);
  }
}

std::uint64_t OffsetGenerator::pick_random_block() {
  if (!zones_.empty()) {
    const double u = rng_.uniform();
    for (const Zone& z : zones_)
      if (u < z.cumulative) return z.first + rng_.below(z.count);
    const Zone& last = zones_.back();
    return last.first + rng_.below(last.count);
  }
  return dist_ ? dist_->next() : rng_.below(blocks_);
}

void OffsetGenerator::account_zone(std::uint64_t count) {
  zone_done_ += count;
  if (zone_done_ < zone_size_) return;
  zone_done_ = 0;
  zone_start_ += zone_step_;
  if (zone_start_ >= blocks_) {
    zone_start_ = 0;
    ++passes_;
  }
  pos_[0] = pos_[1] = zone_start_;
}

OffsetGenerator::Pick OffsetGenerator::next(int d, std::uint32_t bytes) {
  const std::uint64_t want = std::max<std::uint64_t>(1, (bytes + unit_ - 1) / unit_);
  std::uint64_t block = 0, count = want;
  if (strided_) {
    const std::uint64_t zone_end = std::min(blocks_, zone_start_ + zone_range_);
    if (random_) {
      block = zone_start_ + rng_.below(zone_end - zone_start_);
    } else {
      if (pos_[d] < zone_start_ || pos_[d] >= zone_end) pos_[d] = zone_start_;
      block = pos_[d];
    }
    count = std::min(want, zone_end - block);
    pos_[d] = block + count;
    account_zone(count);
  } else if (!random_) {
    if (pos_[d] >= blocks_) {
      pos_[d] = 0;
      ++passes_;
    }
    block = pos_[d];
    count = std::min(want, blocks_ - block);
    // fio: a skip past the end wraps to the start; one before the start
    // (reading backwards) wraps to the end, less the skip.
    const std::int64_t next = static_cast<std::int64_t>(block + count) + skip_blocks_;
    if (skip_blocks_ == 0 || (next >= 0 && static_cast<std::uint64_t>(next) < blocks_)) {
      pos_[d] = static_cast<std::uint64_t>(next);
    } else if (skip_blocks_ > 0) {
      pos_[d] = 0;
      ++passes_;
    } else {
      const std::int64_t from_end = static_cast<std::int64_t>(blocks_) + skip_blocks_;
      pos_[d] = from_end > 0 ? static_cast<std::uint64_t>(from_end) : 0;
      ++passes_;
    }
  } else if (run_left_[d] != 0 && run_next_[d] < blocks_ && (!map_ || !map_->is_used(run_next_[d]))) {
    // randread:N — the rest of a run goes on from where the last I/O ended.
    --run_left_[d];
    block = run_next_[d];
    count = map_ ? map_->mark_run(block, want) : std::min(want, blocks_ - block);
  } else if (map_) {
    if (map_->full()) {
      map_->clear();
      ++passes_;
    }
    block = map_->next_free(rng_.below(blocks_));
    count = map_->mark_run(block, want);
    run_left_[d] = random_run_ - 1;
  } else {
    block = pick_random_block();
    if (align_units_ > 1) block -= block % align_units_;
    count = std::min(want, blocks_ - block);
    run_left_[d] = random_run_ - 1;
  }
  if (random_ && !strided_) run_next_[d] = block + count;
  const std::uint64_t got = count * unit_;
  return {start_ + block * unit_, static_cast<std::uint32_t>(std::min<std::uint64_t>(got, bytes))};
}

}  // namespace cxlpool::io
