// SPDX-License-Identifier: Apache-2.0
// Count-Min sketch: the core of the hot-page tracker (HPT).
//
// H rows of W 32-bit saturating counters. A key (page frame number or address)
// is mixed once into 64 bits; row r's column is the top log2(W) bits of
// mix * m_r, with m_r an odd multiplier per row (multiply-shift hashing), so the
// hot path has no division and one multiply per row.
//
// Guarantees (N = total count recorded since the last reset):
//   estimate(k) >= true(k), always (counters saturate, they never wrap);
//   estimate(k) <= true(k) + e/W * N with probability >= 1 - e^-H (plain update).
//
// Conservative update (config.conservative_update): a key only raises the
// counters that are below its new estimate (min + count), instead of adding to
// every row. Estimates stay >= true counts and are never above those of plain
// update on the same stream -- on skewed (zipf) streams the overestimate drops
// markedly. The price: every update reads all H counters before writing (a
// dependent read-then-write pass instead of independent increments, slower
// and not batch-friendly), and counts can no longer be subtracted.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/mix.hpp"

namespace cxlpool::tiering {

struct CountMinSketchConfig {
  std::uint32_t rows = 4;       // H, 1..kMaxRows
  std::uint32_t width = 4096;   // W counters per row, power of two, kMinWidth..kMaxWidth
  bool conservative_update = false;
  std::uint64_t seed = 0;       // selects the row hash functions
};

class CountMinSketch {
 public:
  static constexpr std::uint32_t kMaxRows = 16;
  static constexpr std::uint32_t kMinWidth = 16;
  static constexpr std::uint32_t kMaxWidth = 1u << 28;
  static constexpr std::uint32_t kCounterMax = std::numeric_limits<std::uint32_t>::max();

  // EINVAL: rows outside 1..kMaxRows, or width not a power of two in range.
  static Result<CountMinSketch> create(const CountMinSketchConfig& config);

  // Adds `count` occurrences of `key`.
  void update(std::uint64_t key, std::uint32_t count = 1) {
    if (conservative_) {
      update_conservative(key, count);
      return;
    }
    const std::uint64_t h = mix64(key);
    std::uint32_t* row = counters_.data();
    for (std::uint32_t r = 0; r < rows_; ++r, row += width_) add_saturating(row[column(h, r)], count);
    total_ += count;
  }

  // Adds `count` and returns the key's estimate afterwards (one pass).
  std::uint32_t update_and_estimate(std::uint64_t key, std::uint32_t count = 1);

  // update(key, 1) for every key; hashes a block of keys and prefetches their
  // counters before touching them, which pays off once the sketch outgrows L2.
  void update_batch(std::span<const std::uint64_t> keys);

  // Min over the rows: never below the true count.
  std::uint32_t estimate(std::uint64_t key) const {
    const std::uint64_t h = mix64(key);
    const std::uint32_t* row = counters_.data();
    std::uint32_t best = kCounterMax;
    for (std::uint32_t r = 0; r < rows_; ++r, row += width_) {
      const std::uint32_t v = row[column(h, r)];
      best = v < best ? v : best;
    }
    return best;
  }

  // Epoch reset: zeroes every counter and the total.
  void reset();

  std::uint32_t rows() const { return rows_; }
  std::uint32_t width() const { return width_; }
  bool conservative_update() const { return conservative_; }
  // Sum of all counts recorded since the last reset (N in the error bound).
  std::uint64_t total() const { return total_; }
  std::size_t memory_bytes() const { return counters_.size() * sizeof(std::uint32_t); }

 private:
  CountMinSketch(const CountMinSketchConfig& config, std::uint32_t shift);

  std::size_t column(std::uint64_t h, std::uint32_t r) const {
    return static_cast<std::size_t>((h * multipliers_[r]) >> shift_);
  }
  static void add_saturating(std::uint32_t& c, std::uint32_t count) {
    const std::uint32_t sum = c + count;
    c = sum < c ? kCounterMax : sum;
  }
  void update_conservative(std::uint64_t key, std::uint32_t count);
  template <std::uint32_t H>
  void update_batch_fixed(std::span<const std::uint64_t> keys);
  void update_batch_generic(std::span<const std::uint64_t> keys);

  std::uint32_t rows_;
  std::uint32_t width_;
  std::uint32_t shift_;  // 64 - log2(width)
  bool conservative_;
  std::uint64_t total_ = 0;
  std::uint64_t multipliers_[kMaxRows] = {};
  std::vector<std::uint32_t> counters_;  // row-major, rows_ * width_
};

}  // namespace cxlpool::tiering
