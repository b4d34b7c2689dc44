// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/elector.hpp"

#include <cmath>

namespace cxlpool::tiering::manager {

std::uint64_t promotion_period_ns(double density_ratio, const M5Config& config) {
  const auto lo = static_cast<double>(config.min_period_ns);
  const auto hi = static_cast<double>(config.max_period_ns);
  if (std::isnan(density_ratio) || density_ratio <= 0) return config.max_period_ns;
  if (std::isinf(density_ratio)) return config.min_period_ns;
  const double frequency = std::pow(density_ratio, config.fscale_power) * config.base_frequency_hz;
  if (!(frequency > 0)) return config.max_period_ns;  // underflow
  const double period = 1e9 / frequency;
  if (!(period < hi)) return config.max_period_ns;  // also inf
  if (period < lo) return config.min_period_ns;
  return static_cast<std::uint64_t>(std::llround(period));
}

Election Elector::decide(std::uint64_t now_ns, double density_ratio, bool fast_rising, const M5Config& config,
                         bool hot_candidates) {
  Election e;
  e.period_ns = promotion_period_ns(density_ratio, config);
  period_ns_ = e.period_ns;
  e.slow_denser = density_ratio > 1;  // +inf included
  e.fast_rising = fast_rising;
  e.due = !have_last_ || now_ns < last_promotion_ns_ || now_ns - last_promotion_ns_ >= e.period_ns;
  const bool elected = e.due || e.slow_denser || e.fast_rising;
  e.hot_candidates = !elected && hot_candidates;
  e.promote = elected || hot_candidates;
  e.batch_pages = std::uint64_t{config.batch_pages} * (e.slow_denser ? kHardBatchFactor : 1);
  return e;
}

}  // namespace cxlpool::tiering::manager
