// SPDX-License-Identifier: Apache-2.0
// Migration rate limit: a token bucket in bytes, refilled by elapsed time.
// Its capacity is one second's budget, so an idle manager can move at most
// one second's worth at once. Rate 0 means no migration at all.
#pragma once

#include <cstdint>

namespace cxlpool::tiering::manager {

class TokenBucket {
 public:
  explicit TokenBucket(std::uint64_t bytes_per_s) : rate_(bytes_per_s), tokens_(bytes_per_s) {}

  // Adds the budget earned since the previous refill (the first call only
  // starts the clock; the bucket starts full). A clock going backwards adds
  // nothing.
  void refill(std::uint64_t now_ns);
  // Takes up to `bytes`; returns what it took.
  std::uint64_t take(std::uint64_t bytes);
  // Returns unused budget (capped at the capacity).
  void refund(std::uint64_t bytes);
  // A new rate; the tokens are capped at the new capacity.
  void set_rate(std::uint64_t bytes_per_s);

  std::uint64_t tokens() const { return tokens_; }
  std::uint64_t rate() const { return rate_; }
  std::uint64_t capacity() const { return rate_; }

 private:
  std::uint64_t rate_;
  std::uint64_t tokens_;
  bool started_ = false;
  std::uint64_t last_ns_ = 0;
  std::uint64_t carry_ = 0;  // sub-byte remainder of rate * ns / 1e9, so slow rates do not starve
};

}  // namespace cxlpool::tiering::manager
