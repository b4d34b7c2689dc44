// SPDX-License-Identifier: Apache-2.0
#pragma once
// The KV store's tiers, fastest first; chunks move down as tiers fill.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cxlpool::kvcache {

enum class KvTier : std::uint8_t { kDram = 0, kCxl = 1, kSsd = 2 };
inline constexpr std::size_t kKvTierCount = 3;

[[nodiscard]] constexpr std::string_view to_string(KvTier t) {
  switch (t) {
    case KvTier::kDram: return "dram";
    case KvTier::kCxl: return "cxl";
    case KvTier::kSsd: return "ssd";
  }
  return "?";
}

}  // namespace cxlpool::kvcache
