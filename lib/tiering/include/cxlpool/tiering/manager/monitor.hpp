// SPDX-License-Identifier: Apache-2.0
// Monitor: per-tier accesses, bandwidth and bandwidth density per epoch, and
// whether the fast tier's bandwidth is rising.
//
// Bandwidth is estimated as accesses x 64 B / epoch duration unless the
// caller passes a hardware measurement (TierUsage::measured_bandwidth_bps),
// which wins. Density = bandwidth / used pages. The trend compares the fast
// tier's bandwidth with its value in the previous promotion period, with a
// relative tolerance so a noisy flat bandwidth does not read as rising. No
// moving average: its lag would hide exactly the rise guideline 2 looks for
// -- the one right after a promotion that follows a drop (a shifted hot set).
#pragma once

#include <cstdint>

#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::tiering::manager {

inline constexpr std::uint64_t kAccessBytes = 64;  // one access moves one cache line
inline constexpr double kTrendTolerance = 0.10;    // rises below 10% are noise

struct TierSample {
  std::uint64_t accesses = 0;
  std::uint64_t used_pages = 0;
  double bandwidth_bps = 0;
  double density = 0;  // bytes/s per used page
};

struct MonitorEpoch {
  std::uint64_t duration_ns = 0;
  TierSample fast;
  TierSample slow;
  std::uint64_t unplaced_accesses = 0;  // accesses to pages on neither tier
  // density(slow) / density(fast): +inf when only the slow tier has traffic,
  // 0 when the slow tier has none.
  double density_ratio = 0;
  bool fast_rising = false;
};

class Monitor {
 public:
  void add(TierLocation where, std::uint64_t accesses) {
    switch (where) {
      case TierLocation::kFast: fast_accesses_ += accesses; break;
      case TierLocation::kSlow: slow_accesses_ += accesses; break;
      case TierLocation::kUnknown: unplaced_accesses_ += accesses; break;
    }
  }
  std::uint64_t accesses() const { return fast_accesses_ + slow_accesses_ + unplaced_accesses_; }

  // Closes the epoch. `nominal_ns` is the duration assumed when the clock
  // gives none (first epoch, or a clock that did not advance).
  const MonitorEpoch& end_epoch(const EpochInput& input, std::uint64_t nominal_ns);

  // The Elector made this epoch a promotion period: later epochs' trend is
  // measured against the fast tier's bandwidth now.
  void mark_promotion_period();

  const MonitorEpoch& last() const { return last_; }

 private:
  std::uint64_t fast_accesses_ = 0;
  std::uint64_t slow_accesses_ = 0;
  std::uint64_t unplaced_accesses_ = 0;
  bool have_time_ = false;
  std::uint64_t last_now_ns_ = 0;
  double fast_bps_ = 0;  // last epoch's
  bool have_reference_ = false;
  double reference_bps_ = 0;
  MonitorEpoch last_;
};

// Bandwidth density ratio with the guards the Elector needs.
double density_ratio(double slow_density, double fast_density);

}  // namespace cxlpool::tiering::manager
