// SPDX-License-Identifier: Apache-2.0
// The wire layout and the limits of every payload, written once. Each
// walk() lists a message's fields in wire order together with the rules a
// valid value obeys; the field visitors in field_io.hpp use the same list to
// encode, decode, size and validate, so the four can never disagree.
//
// Layout rule: fixed-size fields first, in declaration order, then strings
// and lists in declaration order, so every fixed field has a fixed offset
// (docs/protocol.md lists them). Hello is frozen for all versions.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "cxlpool/proto/kv_ring.hpp"
#include "cxlpool/proto/messages.hpp"

namespace cxlpool::proto::fields {

// Rules a numeric field may carry. Visitors other than the validator ignore them.
struct KnownBits {
  uint32_t known;
};
struct PermissionBits {};  // within kModeMask
struct Positive {};        // > 0
template <typename T>
struct Between {
  T min;
  T max;
};

enum class Text {
  kPlain,              // <= kMaxStringLength bytes, no NUL
  kClientName,         // <= kMaxClientNameLength bytes of printable ASCII
  kRegionName,         // valid_region_name()
  kRegionNameOrEmpty,  // empty, or valid_region_name()
  kErrorMessage,       // <= kMaxErrorMessageLength bytes, no NUL
  kKnob,               // 1..kMaxKnobLength bytes of printable ASCII
  kKnobOrEmpty,        // empty, or kKnob
  kKvNamespace,        // 1..kMaxKvNamespaceField bytes, no control byte (UTF-8 passes)
  kKvNamespaceOrEmpty, // empty, or kKvNamespace
  kWeightsModel,       // valid_region_name() and <= kMaxWeightsModelLength bytes
};

template <typename T, typename U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

template <typename T>
concept Empty = std::is_empty_v<std::remove_const_t<T>>;

// Ok and the argument-less requests have an empty payload.
void walk(auto&, Empty auto&) {}

void walk(auto& io, Is<Hello> auto& m) {
  io.u16("min_version", m.min_version, Between<uint16_t>{1, std::numeric_limits<uint16_t>::max()});
  io.u16("max_version", m.max_version);
  io.check("min_version", [&] {
    return m.min_version <= m.max_version
               ? std::string()
               : std::to_string(m.min_version) + " is above max_version " + std::to_string(m.max_version);
  });
  io.text("client_name", m.client_name, Text::kClientName);
}

void walk(auto& io, Is<HelloReply> auto& m) {
  io.u16("version", m.version, Between<uint16_t>{kVersionMin, kVersionMax});
  io.u64("client_id", m.client_id);
  io.u32("max_regions", m.max_regions);
  io.u32("max_message_size", m.max_message_size,
         Between<uint32_t>{kHeaderSize, std::numeric_limits<uint32_t>::max()});
  io.text("daemon_version", m.daemon_version, Text::kPlain);
}

void walk(auto& io, Is<ErrorReply> auto& m) {
  // Linux errno values are below 4096 (MAX_ERRNO); 0 or negative is never an error.
  io.i32("code", m.code, Between<int32_t>{1, 4095});
  io.text("message", m.message, Text::kErrorMessage);
}

void walk(auto& io, Is<StatusReply> auto& m) {
  io.u32("pid", m.pid);
  io.u64("uptime_ns", m.uptime_ns);
  io.u32("clients", m.clients);
  io.u32("regions", m.regions);
  io.u64("bytes_allocated", m.bytes_allocated);
  io.text("daemon_version", m.daemon_version, Text::kPlain);
  io.text("state_dir", m.state_dir, Text::kPlain);
  io.text("config_source", m.config_source, Text::kPlain);
}

void walk(auto& io, Is<TierInfo> auto& m) {
  io.u32("id", m.id);
  io.enumeration("kind", m.kind, TierKind::kEmulated);
  io.i32("numa_node", m.numa_node, Between<int32_t>{-1, std::numeric_limits<int32_t>::max()});
  io.u64("capacity", m.capacity);
  io.u64("used", m.used);
  io.u64("free", m.free);
  io.u32("latency_ns", m.latency_ns);
  io.u32("bandwidth_mbps", m.bandwidth_mbps);
  io.u32("page_size", m.page_size);
  io.text("name", m.name, Text::kPlain);
}

void walk(auto& io, Is<TiersReply> auto& m) { io.list("tiers", m.tiers); }

void walk(auto& io, Is<RegionAlloc> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.u64("size", m.size, Positive{});
  io.u32("flags", m.flags, KnownBits{kAllocKnownFlags});
}

void walk(auto& io, Is<RegionReply> auto& m) {
  io.u64("region_id", m.region_id);
  io.u32("tier_id", m.tier_id);
  io.u64("size", m.size);
  io.u32("page_size", m.page_size);
  io.u32("flags", m.flags, KnownBits{kRegionKnownFlags});
  io.text("name", m.name, Text::kRegionNameOrEmpty);
}

void walk(auto& io, Is<RegionFree> auto& m) { io.u64("region_id", m.region_id); }

void walk(auto& io, Is<NamedCreate> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.u64("size", m.size, Positive{});
  io.u32("mode", m.mode, PermissionBits{});
  io.u32("flags", m.flags, KnownBits{kAllocKnownFlags});
  io.text("name", m.name, Text::kRegionName);
}

void walk(auto& io, Is<NamedOpen> auto& m) {
  io.u32("flags", m.flags, KnownBits{kOpenKnownFlags});
  io.text("name", m.name, Text::kRegionName);
}

void walk(auto& io, Is<NamedUnlink> auto& m) { io.text("name", m.name, Text::kRegionName); }

void walk(auto& io, Is<RegionEntry> auto& m) {
  io.u64("id", m.id);
  io.enumeration("kind", m.kind, RegionKind::kNamed);
  io.u32("tier_id", m.tier_id);
  io.u64("size", m.size);
  io.u32("owner_uid", m.owner_uid);
  io.u32("mode", m.mode, PermissionBits{});
  io.u64("client_id", m.client_id);
  io.u32("handles", m.handles);
  io.u64("resident_bytes", m.resident_bytes);
  // Named regions are listed by name; leased ones have none.
  io.text("name", m.name, Text::kRegionNameOrEmpty);
  io.check("name", [&] {
    if (m.kind == RegionKind::kNamed && m.name.empty()) return std::string("empty for a named region");
    if (m.kind == RegionKind::kLeased && !m.name.empty()) return std::string("set for a leased region");
    return std::string();
  });
}

void walk(auto& io, Is<RegionsReply> auto& m) { io.list("regions", m.regions); }

void walk(auto& io, Is<RegionMigrate> auto& m) {
  io.u64("region_id", m.region_id);
  io.u32("target_tier", m.target_tier);
}

void walk(auto& io, Is<MigrateReply> auto& m) {
  io.u64("region_id", m.region_id);
  io.u32("from_tier", m.from_tier);
  io.u32("to_tier", m.to_tier);
  io.u64("pages_total", m.pages_total);
  io.u64("pages_moved", m.pages_moved);
  io.u64("pages_already", m.pages_already);
  io.u64("pages_absent", m.pages_absent);
  io.u64("pages_failed", m.pages_failed);
  io.u64("bytes_moved", m.bytes_moved);
  io.u64("elapsed_ns", m.elapsed_ns);
}

void walk(auto& io, Is<ClientEntry> auto& m) {
  io.u64("id", m.id);
  io.u32("pid", m.pid);
  io.u32("uid", m.uid);
  io.u32("gid", m.gid);
  io.u32("regions", m.regions);
  io.u64("bytes", m.bytes);
  io.u64("connected_ns", m.connected_ns);
  io.text("name", m.name, Text::kClientName);  // the client's Hello.client_name
}

void walk(auto& io, Is<ClientsReply> auto& m) { io.list("clients", m.clients); }

void walk(auto& io, Is<Counter> auto& m) {
  io.u64("value", m.value);
  io.text("name", m.name, Text::kPlain);
}

void walk(auto& io, Is<StatsReply> auto& m) { io.list("counters", m.counters); }

void walk(auto& io, Is<BackendEntry> auto& m) {
  io.enumeration("state", m.state, BackendState::kFailed);
  io.text("cls", m.cls, Text::kPlain);
  io.text("name", m.name, Text::kPlain);
  io.text("detail", m.detail, Text::kPlain);
}

void walk(auto& io, Is<BackendsReply> auto& m) { io.list("backends", m.backends); }

void walk(auto& io, Is<AccessRingOpen> auto& m) {
  io.u32("entries", m.entries, Between<uint32_t>{0, kMaxAccessRingEntries});
  io.check("entries", [&] {
    return (m.entries & (m.entries - 1)) == 0 ? std::string() : std::to_string(m.entries) + " is not a power of two";
  });
}

void walk(auto& io, Is<AccessRingReply> auto& m) {
  io.u32("entries", m.entries, Between<uint32_t>{1, kMaxAccessRingEntries});
  io.check("entries", [&] {
    return (m.entries & (m.entries - 1)) == 0 ? std::string() : std::to_string(m.entries) + " is not a power of two";
  });
  io.u32("entry_size", m.entry_size, Between<uint32_t>{1, 4096});
  io.u64("ring_bytes", m.ring_bytes, Positive{});
}

void walk(auto& io, Is<TieringTierEntry> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.enumeration("role", m.role, TierRole::kUnmanaged);
  io.u64("capacity_bytes", m.capacity_bytes);
  io.u64("used_bytes", m.used_bytes);
  io.u64("hot_pages", m.hot_pages);
  io.u64("accesses", m.accesses);
  io.u64("bandwidth_bps", m.bandwidth_bps);
  io.u64("promotions", m.promotions);
  io.u64("demotions", m.demotions);
  io.u64("bytes_promoted", m.bytes_promoted);
  io.u64("bytes_demoted", m.bytes_demoted);
  io.u64("rate_limit_hits", m.rate_limit_hits);
  io.text("name", m.name, Text::kPlain);
}

void walk(auto& io, Is<TieringSourceEntry> auto& m) {
  io.enumeration("state", m.state, BackendState::kFailed);
  io.u64("accesses", m.accesses);
  io.u64("dropped", m.dropped);
  io.text("name", m.name, Text::kPlain);
  io.text("detail", m.detail, Text::kPlain);
}

void walk(auto& io, Is<KnobEntry> auto& m) {
  io.text("key", m.key, Text::kKnob);
  io.text("value", m.value, Text::kKnobOrEmpty);
}

void walk(auto& io, Is<TieringStatusReply> auto& m) {
  io.u8("enabled", m.enabled, Between<uint8_t>{0, 1});
  io.enumeration("nominator", m.nominator, Nominator::kHwt);
  io.u64("epoch", m.epoch);
  io.u64("epoch_ns", m.epoch_ns);
  io.u64("promotion_period_ns", m.promotion_period_ns);
  io.u64("last_epoch_accesses", m.last_epoch_accesses);
  io.u64("pages_moved", m.pages_moved);
  io.u64("pages_failed", m.pages_failed);
  io.text("detail", m.detail, Text::kPlain);
  io.list("tiers", m.tiers);
  io.list("sources", m.sources);
  io.list("knobs", m.knobs);
}

void walk(auto& io, Is<TieringHot> auto& m) {
  io.u32("top", m.top, Between<uint32_t>{1, static_cast<uint32_t>(kMaxListEntries)});
}

void walk(auto& io, Is<HotPageEntry> auto& m) {
  io.enumeration("space", m.space, AccessSpace::kTrace);
  io.enumeration("page_class", m.page_class, PageClass::kSparse);
  io.u8("touched_words", m.touched_words, Between<uint8_t>{0, 64});
  io.u32("tier_id", m.tier_id);
  io.u64("owner", m.owner);
  io.u64("address", m.address);
  io.u64("count", m.count);
  io.check("address", [&] {
    return m.address % 4096 == 0 ? std::string() : std::string("not a multiple of 4096");
  });
}

void walk(auto& io, Is<TieringHotReply> auto& m) {
  io.u64("epoch", m.epoch);
  io.list("pages", m.pages);
}

void walk(auto& io, Is<TieringSet> auto& m) {
  io.text("key", m.key, Text::kKnob);
  io.text("value", m.value, Text::kKnob);
}

void walk(auto& io, Is<TieringSetReply> auto& m) {
  io.text("key", m.key, Text::kKnob);
  io.text("old_value", m.old_value, Text::kKnobOrEmpty);
  io.text("new_value", m.new_value, Text::kKnob);
}

// ---------------------------------------------------------------- KV store

// The ring geometry rules of kv_ring.hpp, as messages state them.
inline std::string kv_entries_problem(uint32_t n) {
  if (n < kKvRingMinEntries || n > kKvRingMaxEntries) {
    return std::to_string(n) + " outside [" + std::to_string(kKvRingMinEntries) + ", " +
           std::to_string(kKvRingMaxEntries) + "]";
  }
  return (n & (n - 1)) == 0 ? std::string() : std::to_string(n) + " is not a power of two";
}

inline std::string kv_slab_problem(uint32_t bytes) {
  if (bytes < kKvSlabMinBytes || bytes > kKvSlabMaxBytes) {
    return std::to_string(bytes) + " outside [" + std::to_string(kKvSlabMinBytes) + ", " +
           std::to_string(kKvSlabMaxBytes) + "]";
  }
  return bytes % 64 == 0 ? std::string() : std::to_string(bytes) + " is not a multiple of 64";
}

inline std::string page_multiple_problem(uint64_t bytes) {
  return bytes % 4096 == 0 ? std::string() : std::to_string(bytes) + " is not a multiple of 4096";
}

// kv_ring_layout()'s total_bytes, computed here so the codec (fuzzed on its
// own) does not link the ring code; kv_messages_test checks they agree.
inline uint64_t kv_ring_bytes(uint32_t sq_entries, uint32_t cq_entries, uint32_t sq_slab, uint32_t cq_slab) {
  return uint64_t{kKvRingHeaderBytes} + (uint64_t{sq_entries} + cq_entries) * kKvRingEntryBytes + sq_slab + cq_slab;
}

// A request's 0 means "the daemon's default".
inline std::string zero_or(uint64_t v, const std::string& problem) { return v == 0 ? std::string() : problem; }

void walk(auto& io, Is<KvOpen> auto& m) {
  io.u32("sq_entries", m.sq_entries);
  io.u32("cq_entries", m.cq_entries);
  io.u32("sq_slab_bytes", m.sq_slab_bytes);
  io.u32("cq_slab_bytes", m.cq_slab_bytes);
  io.u64("put_window_bytes", m.put_window_bytes);
  io.check("sq_entries", [&] { return zero_or(m.sq_entries, kv_entries_problem(m.sq_entries)); });
  io.check("cq_entries", [&] { return zero_or(m.cq_entries, kv_entries_problem(m.cq_entries)); });
  io.check("sq_slab_bytes", [&] { return zero_or(m.sq_slab_bytes, kv_slab_problem(m.sq_slab_bytes)); });
  io.check("cq_slab_bytes", [&] { return zero_or(m.cq_slab_bytes, kv_slab_problem(m.cq_slab_bytes)); });
  io.check("put_window_bytes", [&] { return page_multiple_problem(m.put_window_bytes); });
}

void walk(auto& io, Is<KvArenaEntry> auto& m) {
  io.u8("tier", m.tier, Between<uint8_t>{0, 1});  // arenas hold the DRAM and CXL tiers only
  io.u32("pool_tier_id", m.pool_tier_id);
  io.u64("bytes", m.bytes, Positive{});
  io.text("region_name", m.region_name, Text::kRegionName);
  io.check("bytes", [&] { return page_multiple_problem(m.bytes); });
}

void walk(auto& io, Is<KvOpenReply> auto& m) {
  io.u32("sq_entries", m.sq_entries);
  io.u32("cq_entries", m.cq_entries);
  io.u32("sq_slab_bytes", m.sq_slab_bytes);
  io.u32("cq_slab_bytes", m.cq_slab_bytes);
  io.u64("ring_bytes", m.ring_bytes);
  io.u64("put_window_bytes", m.put_window_bytes);
  io.u64("slot_bytes", m.slot_bytes, Positive{});
  io.u64("quota_bytes", m.quota_bytes);
  io.u64("tier_bandwidth_bps[0]", m.tier_bandwidth_bps[0]);
  io.u64("tier_bandwidth_bps[1]", m.tier_bandwidth_bps[1]);
  io.u64("tier_bandwidth_bps[2]", m.tier_bandwidth_bps[2]);
  io.u64("tier_latency_ns[0]", m.tier_latency_ns[0]);
  io.u64("tier_latency_ns[1]", m.tier_latency_ns[1]);
  io.u64("tier_latency_ns[2]", m.tier_latency_ns[2]);
  io.list("arenas", m.arenas);
  io.check("sq_entries", [&] { return kv_entries_problem(m.sq_entries); });
  io.check("cq_entries", [&] { return kv_entries_problem(m.cq_entries); });
  io.check("sq_slab_bytes", [&] { return kv_slab_problem(m.sq_slab_bytes); });
  io.check("cq_slab_bytes", [&] { return kv_slab_problem(m.cq_slab_bytes); });
  // The client maps exactly this many bytes and checks the header against them.
  io.check("ring_bytes", [&] {
    const uint64_t expected = kv_ring_bytes(m.sq_entries, m.cq_entries, m.sq_slab_bytes, m.cq_slab_bytes);
    return m.ring_bytes == expected ? std::string()
                                    : std::to_string(m.ring_bytes) + " but the ring geometry needs " +
                                          std::to_string(expected);
  });
  // 0: this connection may not put.
  io.check("put_window_bytes", [&] { return page_multiple_problem(m.put_window_bytes); });
  io.check("slot_bytes", [&] { return page_multiple_problem(m.slot_bytes); });
  io.check("arenas", [&] {
    bool seen[2] = {false, false};
    for (const KvArenaEntry& a : m.arenas) {
      if (a.tier > 1) continue;  // the entry's own rule reports it
      if (seen[a.tier]) return "tier " + std::to_string(a.tier) + " listed twice";
      seen[a.tier] = true;
      if (a.bytes < m.slot_bytes) {
        return "tier " + std::to_string(a.tier) + " arena of " + std::to_string(a.bytes) +
               " bytes is smaller than one slot";
      }
    }
    return seen[0] ? std::string() : std::string("no DRAM arena");
  });
}

void walk(auto& io, Is<KvNamespaceOpen> auto& m) {
  io.u32("tp_rank", m.tp_rank);
  io.u32("tp_size", m.tp_size, Positive{});
  io.u32("chunk_tokens", m.chunk_tokens, Positive{});
  io.text("model_id", m.model_id, Text::kKvNamespace);
  io.text("layout", m.layout, Text::kKvNamespace);
  io.text("dtype", m.dtype, Text::kKvNamespace);
  io.u32("mode", m.mode, Between<uint32_t>{0, 0666});
  io.check("mode", [&] { return (m.mode & ~0666u) == 0 ? std::string() : std::string("has bits outside 0666"); });
  io.check("tp_rank", [&] {
    return m.tp_rank < m.tp_size ? std::string()
                                 : std::to_string(m.tp_rank) + " is not below tp_size " + std::to_string(m.tp_size);
  });
}

void walk(auto& io, Is<KvNamespaceReply> auto& m) {
  io.u64("namespace_id", m.namespace_id);
  io.u64("fingerprint_hi", m.fingerprint_hi);
  io.u64("fingerprint_lo", m.fingerprint_lo);
  io.u32("chunk_tokens", m.chunk_tokens, Positive{});
  io.u32("owner_uid", m.owner_uid);
  io.u32("owner_gid", m.owner_gid);
  io.u32("mode", m.mode, Between<uint32_t>{0, 0666});
  io.u8("rights", m.rights, Between<uint8_t>{0, 3});
}

void walk(auto& io, Is<KvTierStatus> auto& m) {
  io.u8("tier", m.tier, Between<uint8_t>{0, kKvTierCountWire - 1});
  io.u8("present", m.present, Between<uint8_t>{0, 1});
  io.u64("capacity_bytes", m.capacity_bytes);
  io.u64("used_bytes", m.used_bytes);
  io.u64("chunks", m.chunks);
  io.u64("hits", m.hits);
  io.u64("misses", m.misses);
  io.u64("evictions", m.evictions);
  io.u64("promotions", m.promotions);
  io.u64("demotions", m.demotions);
  io.u64("admissions_rejected", m.admissions_rejected);
  io.u64("bytes_written", m.bytes_written);
  io.u64("bytes_read", m.bytes_read);
  io.u64("errors", m.errors);
  io.text("name", m.name, Text::kPlain);
}

void walk(auto& io, Is<KvStatusReply> auto& m) {
  io.u8("enabled", m.enabled, Between<uint8_t>{0, 1});
  io.u8("eviction", m.eviction, Between<uint8_t>{0, 1});
  io.u8("ssd_sync", m.ssd_sync, Between<uint8_t>{0, 1});
  io.u32("admission_threshold", m.admission_threshold);
  io.u64("slot_bytes", m.slot_bytes);
  io.u64("chunks", m.chunks);
  io.u64("index_capacity", m.index_capacity);
  io.u64("lookups", m.lookups);
  io.u64("lookup_keys", m.lookup_keys);
  io.u64("lookup_hits", m.lookup_hits);
  io.u64("gets", m.gets);
  io.u64("puts", m.puts);
  io.u64("put_aborts", m.put_aborts);
  io.u64("prefetches", m.prefetches);
  io.u64("deletes", m.deletes);
  io.u64("leases", m.leases);
  io.u64("leased_bytes", m.leased_bytes);
  io.u64("reservations", m.reservations);
  io.u64("quota_rejections", m.quota_rejections);
  io.u64("ssd_durable_sequence", m.ssd_durable_sequence);
  io.text("detail", m.detail, Text::kPlain);
  io.list("tiers", m.tiers);
  // A disabled store reports zeros; an enabled one has slots of whole pages.
  io.check("slot_bytes", [&] {
    if (m.enabled == 1 && m.slot_bytes == 0) return std::string("0 while enabled");
    return page_multiple_problem(m.slot_bytes);
  });
  io.check("tiers", [&] {
    if (m.tiers.size() > kKvTierCountWire) {
      return std::to_string(m.tiers.size()) + " entries, at most " + std::to_string(kKvTierCountWire);
    }
    bool seen[kKvTierCountWire] = {};
    for (const KvTierStatus& t : m.tiers) {
      if (t.tier >= kKvTierCountWire) continue;  // the entry's own rule reports it
      if (seen[t.tier]) return "tier " + std::to_string(t.tier) + " listed twice";
      seen[t.tier] = true;
    }
    return std::string();
  });
}

void walk(auto& io, Is<KvNamespaceEntry> auto& m) {
  io.u64("namespace_id", m.namespace_id);
  io.u64("fingerprint_hi", m.fingerprint_hi);
  io.u64("fingerprint_lo", m.fingerprint_lo);
  io.u32("tp_rank", m.tp_rank);
  io.u32("tp_size", m.tp_size);
  io.u32("chunk_tokens", m.chunk_tokens);
  io.u64("chunks[0]", m.chunks[0]);
  io.u64("chunks[1]", m.chunks[1]);
  io.u64("chunks[2]", m.chunks[2]);
  io.u64("bytes[0]", m.bytes[0]);
  io.u64("bytes[1]", m.bytes[1]);
  io.u64("bytes[2]", m.bytes[2]);
  io.u32("owner_uid", m.owner_uid);
  io.u32("owner_gid", m.owner_gid);
  io.u32("mode", m.mode, Between<uint32_t>{0, 0666});
  io.text("model_id", m.model_id, Text::kKvNamespaceOrEmpty);
  io.text("layout", m.layout, Text::kKvNamespaceOrEmpty);
  io.text("dtype", m.dtype, Text::kKvNamespaceOrEmpty);
  // A namespace recovered from SSD is known by its fingerprint alone (no
  // spec, its numbers are not meaningful); one opened by a client has all of it.
  io.check("model_id", [&] {
    if (m.model_id.empty() && m.layout.empty() && m.dtype.empty()) return std::string();
    if (m.model_id.empty() || m.layout.empty() || m.dtype.empty()) {
      return std::string("model_id, layout and dtype must be all set or all empty");
    }
    if (m.tp_size == 0 || m.chunk_tokens == 0) return std::string("tp_size and chunk_tokens must be positive");
    if (m.tp_rank >= m.tp_size) {
      return "tp_rank " + std::to_string(m.tp_rank) + " is not below tp_size " + std::to_string(m.tp_size);
    }
    return std::string();
  });
}

void walk(auto& io, Is<KvNamespacesReply> auto& m) { io.list("namespaces", m.namespaces); }

void walk(auto& io, Is<KvNamespaceDrop> auto& m) { io.u64("namespace_id", m.namespace_id); }

void walk(auto& io, Is<KvNamespaceDropReply> auto& m) {
  io.u64("chunks_dropped", m.chunks_dropped);
  io.u64("chunks_deferred", m.chunks_deferred);
}

void walk(auto& io, Is<WeightsPath> auto& m) {
  io.text("path", m.path, Text::kPlain);
  io.check("path", [&] {
    return !m.path.empty() && m.path.front() == '/' ? std::string() : std::string("not an absolute path");
  });
}

void walk(auto& io, Is<WeightsLoad> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.u64("max_resident_bytes", m.max_resident_bytes);
  io.text("model", m.model, Text::kWeightsModel);
  io.list("paths", m.paths);
  io.check("paths", [&] {
    if (m.paths.empty()) return std::string("no files");
    if (m.paths.size() > kMaxWeightsFiles) {
      return std::to_string(m.paths.size()) + " files, at most " + std::to_string(kMaxWeightsFiles);
    }
    return std::string();
  });
}

void walk(auto& io, Is<WeightsOpen> auto& m) { io.text("model", m.model, Text::kWeightsModel); }

void walk(auto& io, Is<WeightsLoadReply> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.u32("files", m.files, Positive{});
  io.u64("tensor_count", m.tensor_count);
  io.u64("total_bytes", m.total_bytes);
  io.u64("resident_bytes", m.resident_bytes);
  io.u64("region_bytes", m.region_bytes, Positive{});
  io.u8("loaded", m.loaded, Between<uint8_t>{0, 1});
  io.text("region_name", m.region_name, Text::kRegionName);
  io.check("resident_bytes", [&] {
    return m.resident_bytes <= m.total_bytes && m.resident_bytes <= m.region_bytes
               ? std::string()
               : std::string("more than total_bytes or region_bytes");
  });
}

void walk(auto& io, Is<WeightsUnload> auto& m) { io.text("model", m.model, Text::kWeightsModel); }

void walk(auto& io, Is<WeightsUnloadReply> auto& m) { io.u64("region_bytes", m.region_bytes); }

void walk(auto& io, Is<WeightsEntry> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.u32("files", m.files, Positive{});
  io.u32("owner_uid", m.owner_uid);
  io.u32("opens", m.opens);
  io.u64("tensor_count", m.tensor_count);
  io.u64("total_bytes", m.total_bytes);
  io.u64("resident_bytes", m.resident_bytes);
  io.u64("region_bytes", m.region_bytes);
  io.text("model", m.model, Text::kWeightsModel);
  io.text("region_name", m.region_name, Text::kRegionName);
  io.check("resident_bytes", [&] {
    return m.resident_bytes <= m.total_bytes ? std::string() : std::string("more than total_bytes");
  });
}

void walk(auto& io, Is<WeightsListReply> auto& m) { io.list("models", m.models); }

void walk(auto& io, Is<GpuHostAlloc> auto& m) {
  io.u32("tier_id", m.tier_id);
  io.u32("device", m.device);
  io.u64("bytes", m.bytes, Positive{});
}

void walk(auto& io, Is<GpuHostAllocReply> auto& m) {
  io.u64("bytes", m.bytes, Positive{});
  io.u32("numa_node", m.numa_node);
}

}  // namespace cxlpool::proto::fields
