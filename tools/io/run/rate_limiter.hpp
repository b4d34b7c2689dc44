// SPDX-License-Identifier: Apache-2.0
// rate= / rate_iops= for one direction: a token bucket refilled at the rate,
// holding at most `burst_ns` worth of credit so an idle stretch does not
// turn into a burst far above the rate. Whichever of the byte and IOPS limits
// is stricter decides. With rate_process=poisson the gap each I/O costs is
// drawn from an exponential distribution of the same mean, so arrivals form
// a Poisson process at the rate.
#pragma once

#include <cstdint>

#include "rng.hpp"

namespace cxlpool::io {

class RateLimiter {
 public:
  RateLimiter() = default;
  // 0 means unlimited for either. `burst_ns`: credit an idle limiter keeps.
  RateLimiter(std::uint64_t bytes_per_s, std::uint64_t ios_per_s, std::uint64_t burst_ns = 1'000'000);

  bool limited() const { return bytes_per_s_ != 0 || ios_per_s_ != 0; }

  // rate_process=poisson: exponential gaps drawn from `seed`'s sequence.
  void use_poisson(std::uint64_t seed) {
    poisson_ = true;
    rng_.reseed(seed);
  }

  // Nanoseconds until an I/O of `bytes` may start at `now_ns` (0: now).
  std::uint64_t wait_ns(std::uint64_t now_ns, std::uint32_t bytes) const;
  // Takes the tokens of an I/O of `bytes` started at `now_ns`.
  void consume(std::uint64_t now_ns, std::uint32_t bytes);
  // Forgets the history (after ramp_time, or a pause).
  void reset(std::uint64_t now_ns);

 private:
  std::uint64_t cost_ns(std::uint32_t bytes) const;

  std::uint64_t bytes_per_s_ = 0;
  std::uint64_t ios_per_s_ = 0;
  std::uint64_t burst_ns_ = 0;
  // The time at which the bucket is empty again: I/O may start while
  // next_free_ns_ - burst_ns_ <= now.
  std::uint64_t next_free_ns_ = 0;
  bool started_ = false;
  bool poisson_ = false;
  Rng rng_;
};

}  // namespace cxlpool::io
