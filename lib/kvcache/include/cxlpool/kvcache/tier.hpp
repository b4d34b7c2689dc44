// SPDX-License-Identifier: Apache-2.0
#pragma once
// The KV store's tiers, fastest first; chunks move down as tiers fill.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "cxlpool/common/enum_names.hpp"

namespace cxlpool::kvcache {

enum class KvTier : std::uint8_t { kDram = 0, kCxl = 1, kSsd = 2 };
inline constexpr std::size_t kKvTierCount = 3;

inline constexpr EnumName<KvTier> kKvTierNames[] = {
    {KvTier::kDram, "dram"},
    {KvTier::kCxl, "cxl"},
    {KvTier::kSsd, "ssd"},
};
static_assert(std::size(kKvTierNames) == kKvTierCount);

[[nodiscard]] constexpr std::string_view to_string(KvTier t) { return enum_name(kKvTierNames, t, "?"); }

}  // namespace cxlpool::kvcache
