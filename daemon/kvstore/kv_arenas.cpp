// SPDX-License-Identifier: Apache-2.0
#include "kv_arenas.hpp"

#include <unistd.h>

#include <cerrno>

namespace cxlpool::daemon {
namespace {

// The slow tier's speed when nothing is declared for it: a CXL memory
// expander behind one x8 link.
constexpr uint32_t kCxlDefaultBandwidthMbps = 10000;
constexpr uint32_t kCxlDefaultLatencyNs = 300;

Result<uint32_t> tier_by_name(const std::vector<Tier>& tiers, const std::string& name, const char* key) {
  for (const auto& t : tiers) {
    if (t.name == name) return t.id;
  }
  std::string known;
  for (const auto& t : tiers) known += (known.empty() ? "" : ", ") + t.name;
  return fail(ENOENT, std::string("kvstore.") + key + ": no tier named '" + name + "' (tiers: " + known + ")");
}

std::optional<uint32_t> first_of(const std::vector<Tier>& tiers, proto::TierKind kind) {
  for (const auto& t : tiers) {
    if (t.kind == kind) return t.id;
  }
  return std::nullopt;
}

}  // namespace

Result<KvArenaPlan> plan_kv_arenas(const KvStoreSection& config, const std::vector<Tier>& tiers) {
  KvArenaPlan plan;
  if (!config.dram_tier.empty()) {
    auto id = tier_by_name(tiers, config.dram_tier, "dram_tier");
    if (!id) return tl::unexpected(id.error());
    plan.dram_tier = *id;
  } else if (auto id = first_of(tiers, proto::TierKind::kDram)) {
    plan.dram_tier = *id;
  } else {
    return fail(ENODEV, "no dram tier for the DRAM arena (name one with kvstore.dram_tier)");
  }
  plan.dram_bytes = config.dram_bytes / config.slot_bytes * config.slot_bytes;
  if (config.cxl_bytes != 0) {
    if (!config.cxl_tier.empty()) {
      auto id = tier_by_name(tiers, config.cxl_tier, "cxl_tier");
      if (!id) return tl::unexpected(id.error());
      plan.cxl_tier = *id;
    } else {
      plan.cxl_tier = first_of(tiers, proto::TierKind::kCxl);
      if (!plan.cxl_tier) plan.cxl_tier = first_of(tiers, proto::TierKind::kEmulated);
    }
  }
  if (plan.cxl_tier) {
    if (*plan.cxl_tier == plan.dram_tier) {
      return fail(EINVAL, "kvstore: the DRAM and CXL arenas would share tier '" + tiers[plan.dram_tier].name + "'");
    }
    plan.cxl_bytes = config.cxl_bytes / config.slot_bytes * config.slot_bytes;
  }
  return plan;
}

kvcache::TierRates kv_tier_rates(const KvStoreSection& config, const std::vector<Tier>& tiers,
                                 const KvArenaPlan& plan, bool has_ssd) {
  kvcache::TierRates rates;
  auto set = [&](kvcache::KvTier tier, uint32_t mbps, uint32_t ns) {
    const auto i = static_cast<size_t>(tier);
    rates.bandwidth_bps[i] = static_cast<double>(mbps) * 1e6;
    rates.latency_s[i] = static_cast<double>(ns) * 1e-9;
  };
  set(kvcache::KvTier::kDram, config.dram_bandwidth_mbps, config.dram_latency_ns);
  if (plan.cxl_tier) {
    const Tier& t = tiers[*plan.cxl_tier];
    const bool declared = t.kind == proto::TierKind::kEmulated;
    uint32_t mbps = config.cxl_bandwidth_mbps;
    uint32_t ns = config.cxl_latency_ns;
    if (mbps == 0) mbps = declared && t.bandwidth_mbps != 0 ? t.bandwidth_mbps : kCxlDefaultBandwidthMbps;
    if (ns == 0) ns = declared && t.latency_ns != 0 ? t.latency_ns : kCxlDefaultLatencyNs;
    set(kvcache::KvTier::kCxl, mbps, ns);
  }
  if (has_ssd) set(kvcache::KvTier::kSsd, config.ssd_bandwidth_mbps, config.ssd_latency_ns);
  return rates;
}

Result<KvArena> create_kv_arena(RegionPool& pool, const std::string& name, uint32_t tier_id, uint64_t bytes) {
  Requester daemon;
  daemon.uid = ::geteuid();
  daemon.gid = ::getegid();
  daemon.admin = true;
  CreateSpec spec;
  spec.tier_id = tier_id;
  spec.size = bytes;
  spec.kind = proto::RegionKind::kNamed;
  spec.name = name;
  // No client opens it (admins could, and would find it empty): chunks are
  // in the namespaces' views (kv_views.hpp); the region holds the capacity.
  spec.mode = 0;
  spec.system = true;
  auto region = pool.create(spec, daemon);
  if (!region) return fail(region.error().code, "arena " + name + ": " + region.error().message);
  Region& r = **region;
  return KvArena{r.id, r.tier_id, {r.mapping.data(), bytes}};
}

}  // namespace cxlpool::daemon
