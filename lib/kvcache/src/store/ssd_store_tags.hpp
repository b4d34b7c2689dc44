// SPDX-License-Identifier: Apache-2.0
// user_data of the SsdStore's device requests: the kind of request in the
// top byte, a number (read tag, region index) below it.
#pragma once

#include <cstdint>

namespace cxlpool::kvcache::ssd_tags {

enum class Kind : std::uint8_t {
  kRead = 0,         // a batched get: value = slot in pending_
  kRegionWrite = 1,  // value = region index
  kGroupSync = 2,    // the fdatasync after region writes
  kNow = 0xFF,       // io_now's one synchronous request
};

inline constexpr unsigned kKindShift = 56;
inline constexpr std::uint64_t kValueMask = (std::uint64_t{1} << kKindShift) - 1;

[[nodiscard]] constexpr std::uint64_t make(Kind kind, std::uint64_t value) {
  return (std::uint64_t{static_cast<std::uint8_t>(kind)} << kKindShift) | (value & kValueMask);
}
[[nodiscard]] constexpr Kind kind_of(std::uint64_t user_data) {
  return static_cast<Kind>(user_data >> kKindShift);
}
[[nodiscard]] constexpr std::uint64_t value_of(std::uint64_t user_data) { return user_data & kValueMask; }

}  // namespace cxlpool::kvcache::ssd_tags
