// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/driver/rail_health.hpp"

#include <algorithm>
#include <cerrno>

namespace cxlpool::hal {

RailHealth::RailHealth(std::uint32_t rails, std::chrono::milliseconds retry_after)
    : retry_after_(retry_after), down_until_(rails, RailClock::time_point::min()) {}

void RailHealth::take_down(std::uint32_t rail, RailClock::time_point now) {
  if (rail < down_until_.size()) down_until_[rail] = now + retry_after_;
}

void RailHealth::mark_up(std::uint32_t rail) {
  if (rail < down_until_.size()) down_until_[rail] = RailClock::time_point::min();
}

bool RailHealth::in_service(std::uint32_t rail) const {
  return rail < down_until_.size() && down_until_[rail] == RailClock::time_point::min();
}

bool RailHealth::usable(std::uint32_t rail, RailClock::time_point now) const {
  return rail < down_until_.size() && down_until_[rail] <= now;
}

std::vector<std::uint32_t> RailHealth::usable_rails(std::span<const std::uint32_t> candidates,
                                                    RailClock::time_point now) const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t rail : candidates) {
    if (usable(rail, now)) out.push_back(rail);
  }
  return out;
}

RetryDecision decide_retry(ChunkFailure failure, std::uint32_t attempts, std::uint32_t max_attempts,
                           std::uint32_t failed_rail, std::span<const std::uint32_t> usable_rails,
                           int refused_error) {
  RetryDecision d;
  const bool rail_fault = failure == ChunkFailure::kCompletionError || failure == ChunkFailure::kTimeout;
  d.take_rail_down = rail_fault;
  const int final_error = failure == ChunkFailure::kTimeout   ? ETIMEDOUT
                          : failure == ChunkFailure::kRefused ? (refused_error > 0 ? refused_error : EIO)
                                                              : EIO;
  if (failure == ChunkFailure::kRefused || attempts >= max_attempts) {
    d.error = final_error;
    return d;
  }
  // The next usable rail after the failed one, in rail order, wrapping; a
  // failing rail is not a candidate, a rail that merely carried a torn
  // chunk is (when it is the only one).
  std::vector<std::uint32_t> order(usable_rails.begin(), usable_rails.end());
  std::sort(order.begin(), order.end());
  auto next = std::upper_bound(order.begin(), order.end(), failed_rail);
  for (std::size_t i = 0; i < order.size(); ++i, ++next) {
    if (next == order.end()) next = order.begin();
    if (rail_fault && *next == failed_rail) continue;
    d.retry = true;
    d.rail = *next;
    return d;
  }
  d.error = failure == ChunkFailure::kTimeout ? ETIMEDOUT : EHOSTUNREACH;
  return d;
}

}  // namespace cxlpool::hal
