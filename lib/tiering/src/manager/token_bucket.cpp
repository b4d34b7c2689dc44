// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/token_bucket.hpp"

#include <algorithm>

namespace cxlpool::tiering::manager {

void TokenBucket::refill(std::uint64_t now_ns) {
  if (!started_) {
    started_ = true;
    last_ns_ = now_ns;
    return;
  }
  if (now_ns <= last_ns_) return;
  const unsigned __int128 earned =
      static_cast<unsigned __int128>(rate_) * (now_ns - last_ns_) + carry_;
  last_ns_ = now_ns;
  const unsigned __int128 bytes = earned / 1'000'000'000u;
  carry_ = static_cast<std::uint64_t>(earned % 1'000'000'000u);
  const unsigned __int128 filled = bytes + tokens_;
  tokens_ = filled >= rate_ ? rate_ : static_cast<std::uint64_t>(filled);
  if (tokens_ == rate_) carry_ = 0;
}

std::uint64_t TokenBucket::take(std::uint64_t bytes) {
  const std::uint64_t taken = std::min(bytes, tokens_);
  tokens_ -= taken;
  return taken;
}

void TokenBucket::refund(std::uint64_t bytes) { tokens_ = std::min(rate_, tokens_ + std::min(bytes, rate_)); }

void TokenBucket::set_rate(std::uint64_t bytes_per_s) {
  rate_ = bytes_per_s;
  tokens_ = std::min(tokens_, rate_);
  carry_ = 0;
}

}  // namespace cxlpool::tiering::manager
