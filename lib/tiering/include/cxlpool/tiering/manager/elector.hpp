// SPDX-License-Identifier: Apache-2.0
// Elector: when to promote, and how hard.
//
// M5's period rule: T = 1 / (fscale(r) * f_default), r = bw_den(slow) /
// bw_den(fast), fscale(r) = r^n, clamped to [min_period, max_period]. With
// no fast-tier traffic r is infinite (promote at the minimum period); with
// no slow-tier traffic r is 0 (the maximum period).
//
// Guideline 1: while the slow tier is denser (r > 1) the epoch is a
// promotion period at once and the batch grows by kHardBatchFactor (the rate
// limit still caps it). Guideline 2: while the fast tier's bandwidth keeps
// rising after a promotion period, the next epoch promotes again.
// Hot candidates: when the slow tier holds candidates hotter than the fast
// tier's average page (so far hotter than the cold fast pages they would
// displace), the epoch promotes at once: those are the candidates the
// Promoter would swap for fast pages. The period rule governs the rest: a
// stationary placement with a sparse slow tier is still left alone, while a
// hot set that moves is followed within an epoch or two instead of at the
// next period (up to max_period later).
#pragma once

#include <cstdint>

#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::tiering::manager {

inline constexpr std::uint32_t kHardBatchFactor = 4;

// The period for a density ratio, in ns, clamped to the config's range.
std::uint64_t promotion_period_ns(double density_ratio, const M5Config& config);

struct Election {
  bool promote = false;
  bool slow_denser = false;     // guideline 1 applied
  bool fast_rising = false;     // guideline 2 applied
  bool due = false;             // the period elapsed
  bool hot_candidates = false;  // promoting only because of hot candidates
  std::uint64_t period_ns = 0;  // T for this epoch's ratio
  std::uint64_t batch_pages = 0;
};

class Elector {
 public:
  Election decide(std::uint64_t now_ns, double density_ratio, bool fast_rising, const M5Config& config,
                  bool hot_candidates = false);
  // The caller made `now_ns` a promotion period.
  void promoted(std::uint64_t now_ns) {
    have_last_ = true;
    last_promotion_ns_ = now_ns;
  }
  std::uint64_t period_ns() const { return period_ns_; }

 private:
  bool have_last_ = false;
  std::uint64_t last_promotion_ns_ = 0;
  std::uint64_t period_ns_ = 0;
};

}  // namespace cxlpool::tiering::manager
