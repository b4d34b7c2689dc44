// SPDX-License-Identifier: Apache-2.0
// Swap judge: how much hotter than an average fast page a slow-tier
// candidate must be before a fast page is demoted for it.
//
// The manager rarely knows how hot a fast page is (M5's trackers sit on the
// CXL side and see only slow-tier traffic), so whether swapping a candidate
// for the coldest fast pages pays off depends on the workload: under a
// stable skew the LRU tail is dead and even a warm candidate gains; where
// use moves in a front (a graph iteration) the LRU tail comes back and
// past counts predict the future poorly, so swaps lose. The judge measures
// it the way M5's Elector does, from the tiers' bandwidth: after a plan with
// swaps it compares the fast tier's share of the traffic over the next
// kWindowEpochs epochs with the share when the plan was made. A clear drop
// doubles the factor (up to 1: only candidates hotter than the average fast
// page); a clear rise halves it (down to kMinFactor). Without swaps the
// factor stays. It starts at 1, the cautious end: a swap that demotes a
// still-used page costs more than a missed promotion gains, and damage done
// before the first judgement is not undone (the demoted page must then beat
// the raised bar to come back).
#pragma once

#include <algorithm>
#include <cstdint>

namespace cxlpool::tiering::manager {

class SwapJudge {
 public:
  static constexpr double kStartFactor = 1.0;
  static constexpr double kMinFactor = 1.0 / 16;
  static constexpr double kMaxFactor = 1.0;
  static constexpr std::uint32_t kWindowEpochs = 5;
  static constexpr double kTolerance = 0.005;  // share points: below this is noise

  double factor() const { return factor_; }

  // The fast tier's share of this epoch's traffic (0..1).
  void epoch(double fast_share) {
    last_share_ = fast_share;
    if (!judging_) return;
    sum_ += fast_share;
    if (++seen_ < kWindowEpochs) return;
    const double after = sum_ / seen_;
    if (after < before_ - kTolerance) factor_ = std::min(kMaxFactor, factor_ * 2);
    if (after > before_ + kTolerance) factor_ = std::max(kMinFactor, factor_ / 2);
    judging_ = false;
  }

  // A plan demoted fast pages to make room for candidates (this epoch).
  void swapped() {
    if (judging_) return;  // judged with the window already open
    judging_ = true;
    before_ = last_share_;
    sum_ = 0;
    seen_ = 0;
  }

 private:
  double factor_ = kStartFactor;
  double last_share_ = 0;
  bool judging_ = false;
  double before_ = 0;
  double sum_ = 0;
  std::uint32_t seen_ = 0;
};

}  // namespace cxlpool::tiering::manager
