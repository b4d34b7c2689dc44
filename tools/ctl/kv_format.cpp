// SPDX-License-Identifier: Apache-2.0
#include "kv_format.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cxlpool/common/units.hpp"
#include "table.hpp"

namespace cxlpool::ctl {

namespace {

using nlohmann::json;

constexpr uint8_t kTiers = proto::kKvTierCountWire;

std::string num(uint64_t v) { return std::to_string(v); }

std::string percent(double fraction) {
  if (fraction < 0) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

std::string hex128(uint64_t hi, uint64_t lo) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

json rate_json(double fraction) { return fraction < 0 ? json(nullptr) : json(fraction); }

// The reply's tier entries by tier value; a missing one is a zero entry, not present.
std::vector<proto::KvTierStatus> tiers_in_order(const proto::KvStatusReply& reply) {
  std::vector<proto::KvTierStatus> out(kTiers);
  for (uint8_t t = 0; t < kTiers; ++t) out[t].tier = t;
  for (const auto& entry : reply.tiers) {
    if (entry.tier < kTiers) out[entry.tier] = entry;
  }
  return out;
}

bool recovered_only(const proto::KvNamespaceEntry& e) { return e.model_id.empty(); }

std::vector<proto::KvNamespaceEntry> by_id(const proto::KvNamespacesReply& reply) {
  std::vector<proto::KvNamespaceEntry> out = reply.namespaces;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.namespace_id < b.namespace_id; });
  return out;
}

const char* eviction_name(uint8_t v) { return v == 1 ? "s3fifo" : "lru"; }
const char* sync_name(uint8_t v) { return v == 1 ? "per-commit" : "per-region"; }

}  // namespace

std::string kv_tier_name(uint8_t tier) {
  switch (tier) {
    case 0: return "dram";
    case 1: return "cxl";
    case 2: return "ssd";
    default: return "tier " + std::to_string(tier);
  }
}

double kv_hit_rate(uint64_t hits, uint64_t misses) {
  const double asked = static_cast<double>(hits) + static_cast<double>(misses);
  return asked > 0 ? static_cast<double>(hits) / asked : -1.0;
}

json kv_status_json(const proto::KvStatusReply& r) {
  json tiers = json::array();
  for (const auto& t : tiers_in_order(r)) {
    tiers.push_back({{"tier", kv_tier_name(t.tier)}, {"present", t.present != 0}, {"name", t.name},
                     {"capacity", t.capacity_bytes}, {"used", t.used_bytes}, {"chunks", t.chunks},
                     {"hits", t.hits}, {"misses", t.misses}, {"hit_rate", rate_json(kv_hit_rate(t.hits, t.misses))},
                     {"evictions", t.evictions}, {"promotions", t.promotions}, {"demotions", t.demotions},
                     {"admissions_rejected", t.admissions_rejected}, {"bytes_written", t.bytes_written},
                     {"bytes_read", t.bytes_read}, {"errors", t.errors}});
  }
  const uint64_t lookup_misses = r.lookup_keys >= r.lookup_hits ? r.lookup_keys - r.lookup_hits : 0;
  return json{{"enabled", r.enabled != 0},
              {"detail", r.detail},
              {"eviction", eviction_name(r.eviction)},
              {"ssd_sync", sync_name(r.ssd_sync)},
              {"admission_threshold", r.admission_threshold},
              {"slot_bytes", r.slot_bytes},
              {"chunks", r.chunks},
              {"index_capacity", r.index_capacity},
              {"lookups", r.lookups},
              {"lookup_keys", r.lookup_keys},
              {"lookup_hits", r.lookup_hits},
              {"lookup_hit_rate", rate_json(kv_hit_rate(r.lookup_hits, lookup_misses))},
              {"gets", r.gets},
              {"puts", r.puts},
              {"put_aborts", r.put_aborts},
              {"prefetches", r.prefetches},
              {"deletes", r.deletes},
              {"leases", r.leases},
              {"leased_bytes", r.leased_bytes},
              {"reservations", r.reservations},
              {"quota_rejections", r.quota_rejections},
              {"ssd_durable_sequence", r.ssd_durable_sequence},
              {"tiers", tiers}};
}

std::string kv_status_text(const proto::KvStatusReply& r) {
  std::string out;
  if (r.enabled == 0) {
    out += "kv store:  disabled";
    if (!r.detail.empty()) out += " (" + r.detail + ")";
    return out + "\n";
  }
  const uint64_t lookup_misses = r.lookup_keys >= r.lookup_hits ? r.lookup_keys - r.lookup_hits : 0;
  out += "kv store:  enabled, eviction " + std::string(eviction_name(r.eviction)) + ", SSD sync " +
         sync_name(r.ssd_sync) + ", SSD admission after " + num(r.admission_threshold) +
         (r.admission_threshold == 1 ? " sighting\n" : " sightings\n");
  out += "chunks:    " + num(r.chunks) + " indexed (capacity " + num(r.index_capacity) + "), slots of " +
         format_size(r.slot_bytes) + "\n";
  out += "requests:  " + num(r.lookups) + " lookups (" + num(r.lookup_keys) + " keys, " +
         percent(kv_hit_rate(r.lookup_hits, lookup_misses)) + " hit), " + num(r.gets) + " gets, " + num(r.puts) +
         " puts (" + num(r.put_aborts) + " aborted), " + num(r.prefetches) + " prefetches, " + num(r.deletes) +
         " deletes\n";
  out += "held:      " + num(r.leases) + " leases (" + format_size(r.leased_bytes) + "), " + num(r.reservations) +
         " put reservations, " + num(r.quota_rejections) + " quota rejections\n";
  out += "ssd:       durable up to sequence " + num(r.ssd_durable_sequence) + "\n";
  if (!r.detail.empty()) out += "detail:    " + r.detail + "\n";
  out += "\n";
  Table table({"TIER", "NAME", "CAPACITY", "USED", "CHUNKS", "HIT RATE", "HITS", "MISSES", "EVICTIONS",
               "PROMOTED", "DEMOTED", "ADMISSIONS REJECTED", "WRITTEN", "READ", "ERRORS"});
  for (const auto& t : tiers_in_order(r)) {
    if (t.present == 0) {
      table.add({kv_tier_name(t.tier), "(absent)"});
      continue;
    }
    const bool ssd = t.tier == 2;
    table.add({kv_tier_name(t.tier), t.name.empty() ? "-" : t.name, format_size(t.capacity_bytes),
               format_size(t.used_bytes), num(t.chunks), percent(kv_hit_rate(t.hits, t.misses)), num(t.hits),
               num(t.misses), num(t.evictions), num(t.promotions), num(t.demotions),
               ssd ? num(t.admissions_rejected) : "-", format_size(t.bytes_written),
               ssd ? format_size(t.bytes_read) : "-", num(t.errors)});
  }
  return out + table.render();
}

json kv_namespaces_json(const proto::KvNamespacesReply& r) {
  json out = json::array();
  for (const auto& e : by_id(r)) {
    const bool recovered = recovered_only(e);
    auto known = [&](uint32_t v) { return recovered ? json(nullptr) : json(v); };
    json chunks = json::object();
    json bytes = json::object();
    uint64_t total_chunks = 0;
    uint64_t total_bytes = 0;
    for (uint8_t t = 0; t < kTiers; ++t) {
      chunks[kv_tier_name(t)] = e.chunks[t];
      bytes[kv_tier_name(t)] = e.bytes[t];
      total_chunks += e.chunks[t];
      total_bytes += e.bytes[t];
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", e.mode);
    out.push_back({{"id", e.namespace_id},
                   {"fingerprint", hex128(e.fingerprint_hi, e.fingerprint_lo)},
                   {"recovered_only", recovered},
                   {"owner_uid", e.owner_uid},
                   {"owner_gid", e.owner_gid},
                   {"mode", mode},
                   {"model_id", e.model_id},
                   {"layout", e.layout},
                   {"dtype", e.dtype},
                   {"tp_rank", known(e.tp_rank)},
                   {"tp_size", known(e.tp_size)},
                   {"chunk_tokens", known(e.chunk_tokens)},
                   {"chunks", chunks},
                   {"bytes", bytes},
                   {"total_chunks", total_chunks},
                   {"total_bytes", total_bytes}});
  }
  return out;
}

std::string kv_namespaces_text(const proto::KvNamespacesReply& r) {
  Table table({"ID", "OWNER", "MODE", "MODEL", "LAYOUT", "DTYPE", "TP", "TOKENS", "DRAM", "CXL", "SSD", "BYTES",
               "FINGERPRINT"});
  for (const auto& e : by_id(r)) {
    const bool recovered = recovered_only(e);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", e.mode);
    table.add({num(e.namespace_id), num(e.owner_uid), mode, recovered ? "(recovered from SSD)" : e.model_id,
               recovered ? "-" : e.layout,
               recovered ? "-" : e.dtype, recovered ? "-" : num(e.tp_rank) + "/" + num(e.tp_size),
               recovered ? "-" : num(e.chunk_tokens), num(e.chunks[0]), num(e.chunks[1]), num(e.chunks[2]),
               format_size(e.bytes[0] + e.bytes[1] + e.bytes[2]), hex128(e.fingerprint_hi, e.fingerprint_lo)});
  }
  return table.render();
}

json kv_drop_json(uint64_t namespace_id, const proto::KvNamespaceDropReply& r) {
  return json{{"namespace_id", namespace_id}, {"chunks_dropped", r.chunks_dropped},
              {"chunks_deferred", r.chunks_deferred}};
}

std::string kv_drop_text(uint64_t namespace_id, const proto::KvNamespaceDropReply& r) {
  std::string out = "namespace " + num(namespace_id) + ": " + num(r.chunks_dropped) + " chunks dropped";
  if (r.chunks_deferred != 0) {
    out += ", " + num(r.chunks_deferred) + " leased ones go when their leases are released";
  }
  return out + "\n";
}

}  // namespace cxlpool::ctl
