// SPDX-License-Identifier: Apache-2.0
// Which rails a transport may use, and what it does when a chunk fails:
// pure logic with the time passed in, so that the retry decisions are
// tested without a network or a clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

namespace cxlpool::hal {

using RailClock = std::chrono::steady_clock;

// Rails in service, and rails out of service until a time: a rail taken
// down is offered again (to reconnect on demand) once its time has come,
// and is back in service when a chunk succeeds on it.
class RailHealth {
 public:
  RailHealth(std::uint32_t rails, std::chrono::milliseconds retry_after);

  std::uint32_t size() const { return static_cast<std::uint32_t>(down_until_.size()); }
  void take_down(std::uint32_t rail, RailClock::time_point now);
  void mark_up(std::uint32_t rail);
  bool in_service(std::uint32_t rail) const;
  // In service, or out of service with its retry time reached.
  bool usable(std::uint32_t rail, RailClock::time_point now) const;
  // The usable rails among `candidates`, in their order.
  std::vector<std::uint32_t> usable_rails(std::span<const std::uint32_t> candidates, RailClock::time_point now) const;

 private:
  std::chrono::milliseconds retry_after_;
  // time_point::min() while in service.
  std::vector<RailClock::time_point> down_until_;
};

enum class ChunkFailure : std::uint8_t {
  kCompletionError,   // the provider reported an error for the operation
  kTimeout,           // no completion within the operation timeout
  kChecksumMismatch,  // the bytes arrived but their CRC-32C differs
  kRefused,           // the owner refused it (unknown region, out of range)
};

struct RetryDecision {
  bool retry = false;
  std::uint32_t rail = 0;      // where to send it again, when retry
  bool take_rail_down = false;  // the failed rail goes out of service
  int error = 0;                // positive errno for the request, when !retry
};

// What to do with a chunk that failed on `failed_rail` after `attempts`
// tries (the failed one included), given the rails usable now (the failed
// one may be among them). A failing rail (error, timeout) goes out of
// service and the chunk moves to the next usable rail after it; a checksum
// mismatch says nothing about the rail, so the chunk moves on but the rail
// stays; a refusal is final. After max_attempts, or with no other rail
// for a failing one, the request fails: EIO (mismatch, error), ETIMEDOUT
// (timeout), or the owner's error (refused, `refused_error`).
RetryDecision decide_retry(ChunkFailure failure, std::uint32_t attempts, std::uint32_t max_attempts,
                           std::uint32_t failed_rail, std::span<const std::uint32_t> usable_rails,
                           int refused_error = 0);

}  // namespace cxlpool::hal
