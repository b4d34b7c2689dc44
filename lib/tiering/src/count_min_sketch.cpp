// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/count_min_sketch.hpp"

#include <algorithm>
#include <bit>
#include <string>

namespace cxlpool::tiering {
namespace {

// Keys hashed ahead of their counter updates in update_batch: enough to cover
// DRAM latency with H * kBatch outstanding prefetches, small enough for registers/L1.
constexpr std::size_t kBatch = 16;
// Below this the counters stay in a typical per-core L2 and prefetching only
// adds instructions.
constexpr std::size_t kPrefetchMinBytes = 1u << 20;

}  // namespace

Result<CountMinSketch> CountMinSketch::create(const CountMinSketchConfig& config) {
  if (config.rows < 1 || config.rows > kMaxRows) {
    return fail(EINVAL, "count-min sketch: rows " + std::to_string(config.rows) + " not in 1.." +
                            std::to_string(kMaxRows));
  }
  if (!std::has_single_bit(config.width) || config.width < kMinWidth || config.width > kMaxWidth) {
    return fail(EINVAL, "count-min sketch: width " + std::to_string(config.width) +
                            " is not a power of two in " + std::to_string(kMinWidth) + ".." +
                            std::to_string(kMaxWidth));
  }
  const auto shift = static_cast<std::uint32_t>(64 - std::countr_zero(config.width));
  return CountMinSketch(config, shift);
}

CountMinSketch::CountMinSketch(const CountMinSketchConfig& config, std::uint32_t shift)
    : rows_(config.rows),
      width_(config.width),
      shift_(shift),
      conservative_(config.conservative_update),
      counters_(static_cast<std::size_t>(config.rows) * config.width, 0) {
  // Distinct odd multipliers from a seeded mixed sequence; odd keeps each map a
  // bijection on the 64-bit mix, so row columns depend on all of its bits.
  std::uint64_t state = config.seed;
  for (std::uint32_t r = 0; r < rows_; ++r) {
    state += 0x9e3779b97f4a7c15ULL;
    multipliers_[r] = mix64(state) | 1;
  }
}

std::uint32_t CountMinSketch::update_and_estimate(std::uint64_t key, std::uint32_t count) {
  if (conservative_) {
    update_conservative(key, count);
    return estimate(key);
  }
  const std::uint64_t h = mix64(key);
  std::uint32_t* row = counters_.data();
  std::uint32_t best = kCounterMax;
  for (std::uint32_t r = 0; r < rows_; ++r, row += width_) {
    std::uint32_t& c = row[column(h, r)];
    add_saturating(c, count);
    best = std::min(best, c);
  }
  total_ += count;
  return best;
}

void CountMinSketch::update_conservative(std::uint64_t key, std::uint32_t count) {
  const std::uint64_t h = mix64(key);
  std::uint32_t* slots[kMaxRows];
  std::uint32_t current = kCounterMax;
  std::uint32_t* row = counters_.data();
  for (std::uint32_t r = 0; r < rows_; ++r, row += width_) {
    slots[r] = &row[column(h, r)];
    current = std::min(current, *slots[r]);
  }
  std::uint32_t target = current;
  add_saturating(target, count);
  for (std::uint32_t r = 0; r < rows_; ++r) *slots[r] = std::max(*slots[r], target);
  total_ += count;
}

template <std::uint32_t H>
void CountMinSketch::update_batch_fixed(std::span<const std::uint64_t> keys) {
  std::uint32_t* base = counters_.data();
  if (memory_bytes() < kPrefetchMinBytes) {
    for (std::uint64_t k : keys) {
      const std::uint64_t h = mix64(k);
      std::uint32_t* row = base;
      for (std::uint32_t r = 0; r < H; ++r, row += width_) add_saturating(row[column(h, r)], 1);
    }
    total_ += keys.size();
    return;
  }
  std::size_t idx[kBatch][H];
  std::size_t i = 0;
  for (; i + kBatch <= keys.size(); i += kBatch) {
    for (std::size_t b = 0; b < kBatch; ++b) {
      const std::uint64_t h = mix64(keys[i + b]);
      for (std::uint32_t r = 0; r < H; ++r) {
        idx[b][r] = static_cast<std::size_t>(r) * width_ + column(h, r);
        __builtin_prefetch(base + idx[b][r], 1, 1);
      }
    }
    for (std::size_t b = 0; b < kBatch; ++b) {
      for (std::uint32_t r = 0; r < H; ++r) add_saturating(base[idx[b][r]], 1);
    }
  }
  total_ += i;
  for (; i < keys.size(); ++i) update(keys[i]);
}

void CountMinSketch::update_batch_generic(std::span<const std::uint64_t> keys) {
  for (std::uint64_t k : keys) update(k);
}

void CountMinSketch::update_batch(std::span<const std::uint64_t> keys) {
  if (conservative_) {
    update_batch_generic(keys);
    return;
  }
  switch (rows_) {
    case 2: update_batch_fixed<2>(keys); break;
    case 4: update_batch_fixed<4>(keys); break;
    case 8: update_batch_fixed<8>(keys); break;
    default: update_batch_generic(keys); break;
  }
}

void CountMinSketch::reset() {
  std::fill(counters_.begin(), counters_.end(), 0u);
  total_ = 0;
}

}  // namespace cxlpool::tiering
