// SPDX-License-Identifier: Apache-2.0
#include "depth_search.hpp"

#include <algorithm>

namespace cxlpool::io {

DepthSearch::DepthSearch(std::uint64_t target_ns, std::uint64_t window_ns, double percentile,
                         std::uint32_t max_depth)
    : target_ns_(target_ns), window_ns_(window_ns), percentile_(percentile),
      high_(std::max<std::uint32_t>(1, max_depth)) {}

void DepthSearch::restart(std::uint64_t now_ns) {
  window_start_ = now_ns;
  ios_ = within_ = 0;
}

void DepthSearch::record(std::uint64_t lat_ns, std::uint64_t now_ns) {
  if (done_) return;
  ++ios_;
  if (lat_ns <= target_ns_) ++within_;
  if (now_ns - window_start_ < window_ns_) return;
  judge(static_cast<double>(within_) * 100.0 >= percentile_ * static_cast<double>(ios_));
  restart(now_ns);
}

void DepthSearch::judge(bool met) {
  if (met) {
    low_ = depth_;
  } else {
    // Depth 1 missing it ends the search at depth 1: nothing is lower.
    high_ = depth_ > low_ ? depth_ - 1 : low_;
    missed_ = true;
  }
  if (low_ >= high_) {
    depth_ = low_;
    done_ = true;
    return;
  }
  // Up from successes the depth doubles (the top is often far off); once
  // a depth has missed, the search bisects between the two bounds.
  depth_ = missed_ ? low_ + (high_ - low_ + 1) / 2 : std::min(high_, depth_ * 2);
}

}  // namespace cxlpool::io
