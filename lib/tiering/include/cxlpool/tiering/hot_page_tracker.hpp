// SPDX-License-Identifier: Apache-2.0
// Hot-page tracker (HPT): a Count-Min sketch of page accesses plus the top-K
// pages by estimated count, per epoch. Querying ends the epoch (end_epoch)
// as the hardware tracker does: counts restart from zero for the next period.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/count_min_sketch.hpp"
#include "cxlpool/tiering/top_k.hpp"

namespace cxlpool::tiering {

struct HotPageTrackerConfig {
  CountMinSketchConfig sketch;
  std::size_t top_k = 256;  // 1..kMaxTopK
};

// `count` is the sketch estimate: never below the page's true count this epoch.
using HotPage = KeyCount;

class HotPageTracker {
 public:
  static constexpr std::size_t kMaxTopK = 1u << 20;

  // EINVAL: bad sketch config, or top_k outside 1..kMaxTopK.
  static Result<HotPageTracker> create(const HotPageTrackerConfig& config);

  void record(std::uint64_t page, std::uint32_t count = 1) {
    top_.offer(page, sketch_.update_and_estimate(page, count));
  }

  // This epoch's hot pages so far, hottest first (ties by page number).
  std::vector<HotPage> hot_pages() const { return top_.sorted(); }

  // Returns hot_pages() and starts a new epoch (sketch and top-K cleared).
  std::vector<HotPage> end_epoch();

  std::uint32_t estimate(std::uint64_t page) const { return sketch_.estimate(page); }
  const CountMinSketch& sketch() const { return sketch_; }
  std::size_t memory_bytes() const;

 private:
  HotPageTracker(CountMinSketch sketch, std::size_t k) : sketch_(std::move(sketch)), top_(k) {}

  CountMinSketch sketch_;
  TopK top_;
};

}  // namespace cxlpool::tiering
