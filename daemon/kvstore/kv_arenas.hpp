// SPDX-License-Identifier: Apache-2.0
// The KV store's two arenas: named pool regions owned by the daemon (mode 0,
// and marked system, so no client can open, write, unlink or move them), one
// on the DRAM tier and one on the slow tier (cxl, else emulated), plus the
// tier speeds the recompute-or-load model is given. They reserve the tiers'
// capacity and size the slots; the chunks themselves live in per-namespace
// views of them (kv_views.hpp), which is what clients map.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../region_pool.hpp"
#include "../tier.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/load_cost.hpp"

namespace cxlpool::daemon {

inline constexpr const char* kKvDramArenaName = "cxlpool-kv-dram";
inline constexpr const char* kKvCxlArenaName = "cxlpool-kv-cxl";
// Named regions under this prefix are the daemon's; clients may not create them.
inline constexpr std::string_view kKvReservedPrefix = "cxlpool-kv-";

struct KvArenaPlan {
  uint32_t dram_tier = 0;
  std::optional<uint32_t> cxl_tier;  // none: cxl_bytes = 0, or no slow tier
  uint64_t dram_bytes = 0;           // whole slots
  uint64_t cxl_bytes = 0;            // whole slots; 0 without a CXL arena
};

// Resolves the tier names (or picks the defaults) and cuts the sizes to whole
// slots. No cxl or emulated tier for the default: no CXL arena. ENODEV: no
// dram tier for the default (the store cannot run here); ENOENT: a named
// tier does not exist; EINVAL: both arenas on one tier.
Result<KvArenaPlan> plan_kv_arenas(const KvStoreSection& config, const std::vector<Tier>& tiers);

// Bytes per second and seconds per chunk for each kvcache::KvTier; bandwidth
// 0 for a tier the store does not have.
kvcache::TierRates kv_tier_rates(const KvStoreSection& config, const std::vector<Tier>& tiers,
                                 const KvArenaPlan& plan, bool has_ssd);

struct KvArena {
  uint64_t region_id = 0;
  uint32_t tier_id = 0;
  std::span<std::byte> bytes;  // the daemon's writable mapping, whole slots
};

// Creates the arena `name`: a system named region of `bytes` on the tier.
Result<KvArena> create_kv_arena(RegionPool& pool, const std::string& name, uint32_t tier_id, uint64_t bytes);

}  // namespace cxlpool::daemon
