// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/monitor.hpp"

#include <cmath>
#include <limits>

namespace cxlpool::tiering::manager {
namespace {

TierSample sample(std::uint64_t accesses, const TierUsage& usage, std::uint64_t duration_ns) {
  TierSample s;
  s.accesses = accesses;
  s.used_pages = usage.used_pages;
  s.bandwidth_bps = usage.measured_bandwidth_bps != 0
                        ? static_cast<double>(usage.measured_bandwidth_bps)
                        : static_cast<double>(accesses) * static_cast<double>(kAccessBytes) * 1e9 /
                              static_cast<double>(duration_ns);
  // A tier whose used pages are unknown (0) counts as one page: traffic to
  // it must still read as dense, not as nothing.
  s.density = s.bandwidth_bps / static_cast<double>(usage.used_pages == 0 ? 1 : usage.used_pages);
  return s;
}

}  // namespace

double density_ratio(double slow_density, double fast_density) {
  if (!(slow_density > 0)) return 0;  // also NaN
  if (!(fast_density > 0)) return std::numeric_limits<double>::infinity();
  return slow_density / fast_density;
}

const MonitorEpoch& Monitor::end_epoch(const EpochInput& input, std::uint64_t nominal_ns) {
  std::uint64_t duration = nominal_ns == 0 ? 1 : nominal_ns;
  if (have_time_ && input.now_ns > last_now_ns_) duration = input.now_ns - last_now_ns_;
  have_time_ = true;
  last_now_ns_ = input.now_ns;

  MonitorEpoch e;
  e.duration_ns = duration;
  e.fast = sample(fast_accesses_, input.fast, duration);
  e.slow = sample(slow_accesses_, input.slow, duration);
  e.unplaced_accesses = unplaced_accesses_;
  e.density_ratio = density_ratio(e.slow.density, e.fast.density);

  fast_bps_ = e.fast.bandwidth_bps;
  e.fast_rising = have_reference_ && fast_bps_ > reference_bps_ * (1 + kTrendTolerance) && fast_bps_ > 0;
  last_ = e;
  fast_accesses_ = slow_accesses_ = unplaced_accesses_ = 0;
  return last_;
}

void Monitor::mark_promotion_period() {
  have_reference_ = true;
  reference_bps_ = fast_bps_;
}

}  // namespace cxlpool::tiering::manager
