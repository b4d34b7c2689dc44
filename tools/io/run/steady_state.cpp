// SPDX-License-Identifier: Apache-2.0
#include "steady_state.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kIntervalNs = 1'000'000'000ull;  // fio's ss_interval default

bool uses_bw(SteadyMetric m) { return m == SteadyMetric::kBw || m == SteadyMetric::kBwSlope; }
bool uses_slope(SteadyMetric m) { return m == SteadyMetric::kIopsSlope || m == SteadyMetric::kBwSlope; }

}  // namespace

SteadyState::SteadyState(const JobSpec& job)
    : job_metric_(job.ss_metric), limit_(job.ss_limit), percent_(job.ss_percent), ramp_ns_(job.ss_ramp_ns),
      samples_(std::max<std::size_t>(2, static_cast<std::size_t>(job.ss_dur_ns / kIntervalNs))) {}

bool SteadyState::attained(const std::deque<double>& window, SteadyMetric metric, double limit, bool percent) {
  if (window.size() < 2) return false;
  const double n = static_cast<double>(window.size());
  const double mean = std::accumulate(window.begin(), window.end(), 0.0) / n;
  if (!uses_slope(metric)) {
    double worst = 0;
    for (double v : window) worst = std::max(worst, std::fabs(v - mean));
    return percent ? (mean > 0 && worst * 100.0 / mean <= limit) : worst <= limit;
  }
  // Least-squares slope of the samples against their index (per interval).
  const double x_mean = (n - 1) / 2.0;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < window.size(); ++i) {
    const double dx = static_cast<double>(i) - x_mean;
    num += dx * (window[i] - mean);
    den += dx * dx;
  }
  const double slope = den > 0 ? std::fabs(num / den) : 0;
  return percent ? (mean > 0 && slope * 100.0 / mean <= limit) : slope <= limit;
}

bool SteadyState::update(std::uint64_t now_ns, std::uint64_t start_ns, std::uint64_t bytes, std::uint64_t ios) {
  if (!enabled()) return false;
  if (!started_) {
    if (now_ns < start_ns + ramp_ns_) return false;
    started_ = true;
    next_ns_ = now_ns + kIntervalNs;
    last_bytes_ = bytes;
    last_ios_ = ios;
    return false;
  }
  if (now_ns < next_ns_) return false;
  const double seconds = static_cast<double>(now_ns - (next_ns_ - kIntervalNs)) / 1e9;
  const double value = static_cast<double>(uses_bw(job_metric_) ? bytes - last_bytes_ : ios - last_ios_) / seconds;
  last_bytes_ = bytes;
  last_ios_ = ios;
  next_ns_ = now_ns + kIntervalNs;
  window_.push_back(value);
  if (window_.size() > samples_) window_.pop_front();
  return window_.size() == samples_ && attained(window_, job_metric_, limit_, percent_);
}

}  // namespace cxlpool::io
