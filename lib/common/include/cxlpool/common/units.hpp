// SPDX-License-Identifier: Apache-2.0
// Byte sizes for configs and CLIs: "4096", "64K", "2MiB", "1G" (binary units).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool {

Result<uint64_t> parse_size(std::string_view text);
std::string format_size(uint64_t bytes);  // "1.5 GiB", "512 KiB", "17 B"

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

inline uint64_t round_up(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

}  // namespace cxlpool
