// SPDX-License-Identifier: Apache-2.0
#include "rate_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace cxlpool::io {

RateLimiter::RateLimiter(std::uint64_t bytes_per_s, std::uint64_t ios_per_s, std::uint64_t burst_ns)
    : bytes_per_s_(bytes_per_s), ios_per_s_(ios_per_s), burst_ns_(burst_ns) {}

std::uint64_t RateLimiter::cost_ns(std::uint32_t bytes) const {
  std::uint64_t cost = 0;
  if (bytes_per_s_ != 0)
    cost = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * 1'000'000'000ull / bytes_per_s_);
  if (ios_per_s_ != 0) cost = std::max<std::uint64_t>(cost, 1'000'000'000ull / ios_per_s_);
  return cost;
}

std::uint64_t RateLimiter::wait_ns(std::uint64_t now_ns, std::uint32_t) const {
  if (!limited() || !started_) return 0;
  const std::uint64_t ready = next_free_ns_ > burst_ns_ ? next_free_ns_ - burst_ns_ : 0;
  return ready > now_ns ? ready - now_ns : 0;
}

void RateLimiter::consume(std::uint64_t now_ns, std::uint32_t bytes) {
  if (!limited()) return;
  if (!started_) {
    started_ = true;
    next_free_ns_ = now_ns;
  }
  // Credit older than the burst is gone: the bucket holds at most burst_ns.
  std::uint64_t cost = cost_ns(bytes);
  if (poisson_) cost = static_cast<std::uint64_t>(static_cast<double>(cost) * -std::log1p(-rng_.uniform()));
  next_free_ns_ = std::max<std::uint64_t>(next_free_ns_, now_ns > burst_ns_ ? now_ns - burst_ns_ : 0) + cost;
}

void RateLimiter::reset(std::uint64_t now_ns) {
  started_ = limited();
  next_free_ns_ = now_ns;
}

}  // namespace cxlpool::io
