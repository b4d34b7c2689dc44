// SPDX-License-Identifier: Apache-2.0
// The wire layout and the limits of every payload, written once. Each
// walk() lists a message's fields in wire order together with the rules a
// valid value obeys; the field visitors in field_io.hpp use the same list to
// encode, decode, size and validate, so the four can never disagree. A
// field's width is its member's type. Fields with no rule beyond their type
// are listed by name with CXLPOOL_PROTO_FIELDS; the others with the visitor
// call that carries their rules (number, enumeration, text, check).
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

// The rules a string field may carry; FieldValidator checks them from the
// table in text_rule() (field_validator.cpp).
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
  kDeviceName,         // 1..kMaxDeviceNameLength bytes of printable ASCII (device and host names)
  kDeviceNameOrEmpty,  // empty, or kDeviceName
  kCkptName,           // valid_region_name() and <= kMaxCkptNameLength bytes
};

template <typename T, typename U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

template <typename T>
concept Empty = std::is_empty_v<std::remove_const_t<T>>;

// A field whose only rules are those of its type: a number (its width), an
// array of numbers, a Text::kPlain string, a list (kMaxListEntries, and the
// entries' own walk()).
template <typename T>
void plain(auto& io, const char* name, T& value) {
  using V = std::remove_const_t<T>;
  if constexpr (std::is_integral_v<V>) {
    io.number(name, value);
  } else if constexpr (std::is_array_v<V>) {
    io.array(name, value);
  } else if constexpr (std::same_as<V, std::string>) {
    io.text(name, value, Text::kPlain);
  } else {
    io.list(name, value);
  }
}

// CXLPOOL_PROTO_FIELDS(io, m, a, b) is plain(io, "a", m.a); plain(io, "b", m.b):
// each field named once, in wire order. Its width comes from the member's
// type. Up to 64 fields per use (one rescan each, below).
#define CXLPOOL_PROTO_FIELDS(io, m, ...) \
  __VA_OPT__(CXLPOOL_PROTO_RESCAN(CXLPOOL_PROTO_FIELD_STEP(io, m, __VA_ARGS__)))
#define CXLPOOL_PROTO_FIELD_STEP(io, m, name, ...)      \
  ::cxlpool::proto::fields::plain(io, #name, m.name) \
      __VA_OPT__(; CXLPOOL_PROTO_FIELD_AGAIN CXLPOOL_PROTO_PARENS(io, m, __VA_ARGS__))
#define CXLPOOL_PROTO_FIELD_AGAIN() CXLPOOL_PROTO_FIELD_STEP
#define CXLPOOL_PROTO_PARENS ()
#define CXLPOOL_PROTO_RESCAN(...) \
  CXLPOOL_PROTO_RESCAN3(CXLPOOL_PROTO_RESCAN3(CXLPOOL_PROTO_RESCAN3(CXLPOOL_PROTO_RESCAN3(__VA_ARGS__))))
#define CXLPOOL_PROTO_RESCAN3(...) \
  CXLPOOL_PROTO_RESCAN2(CXLPOOL_PROTO_RESCAN2(CXLPOOL_PROTO_RESCAN2(CXLPOOL_PROTO_RESCAN2(__VA_ARGS__))))
#define CXLPOOL_PROTO_RESCAN2(...) \
  CXLPOOL_PROTO_RESCAN1(CXLPOOL_PROTO_RESCAN1(CXLPOOL_PROTO_RESCAN1(CXLPOOL_PROTO_RESCAN1(__VA_ARGS__))))
#define CXLPOOL_PROTO_RESCAN1(...) __VA_ARGS__

// Ok and the argument-less requests have an empty payload.
void walk(auto&, Empty auto&) {}

void walk(auto& io, Is<Hello> auto& m) {
  io.number("min_version", m.min_version, Between<uint16_t>{1, std::numeric_limits<uint16_t>::max()});
  CXLPOOL_PROTO_FIELDS(io, m, max_version);
  io.check("min_version", [&] {
    return m.min_version <= m.max_version
               ? std::string()
               : std::to_string(m.min_version) + " is above max_version " + std::to_string(m.max_version);
  });
  io.text("client_name", m.client_name, Text::kClientName);
}

void walk(auto& io, Is<HelloReply> auto& m) {
  io.number("version", m.version, Between<uint16_t>{kVersionMin, kVersionMax});
  CXLPOOL_PROTO_FIELDS(io, m, client_id, max_regions);
  io.number("max_message_size", m.max_message_size,
            Between<uint32_t>{kHeaderSize, std::numeric_limits<uint32_t>::max()});
  CXLPOOL_PROTO_FIELDS(io, m, daemon_version);
}

void walk(auto& io, Is<ErrorReply> auto& m) {
  // Linux errno values are below 4096 (MAX_ERRNO); 0 or negative is never an error.
  io.number("code", m.code, Between<int32_t>{1, 4095});
  io.text("message", m.message, Text::kErrorMessage);
}

void walk(auto& io, Is<StatusReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, pid, uptime_ns, clients, regions, bytes_allocated, daemon_version, state_dir,
                       config_source);
}

void walk(auto& io, Is<TierInfo> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, id);
  io.enumeration("kind", m.kind, TierKind::kEmulated);
  io.number("numa_node", m.numa_node, Between<int32_t>{-1, std::numeric_limits<int32_t>::max()});
  CXLPOOL_PROTO_FIELDS(io, m, capacity, used, free, latency_ns, bandwidth_mbps, page_size, name);
}

void walk(auto& io, Is<TiersReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, tiers); }

void walk(auto& io, Is<RegionAlloc> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, tier_id);
  io.number("size", m.size, Positive{});
  io.number("flags", m.flags, KnownBits{kAllocKnownFlags});
}

void walk(auto& io, Is<RegionReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, region_id, tier_id, size, page_size);
  io.number("flags", m.flags, KnownBits{kRegionKnownFlags});
  io.text("name", m.name, Text::kRegionNameOrEmpty);
}

void walk(auto& io, Is<RegionFree> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, region_id); }

void walk(auto& io, Is<NamedCreate> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, tier_id);
  io.number("size", m.size, Positive{});
  io.number("mode", m.mode, PermissionBits{});
  io.number("flags", m.flags, KnownBits{kAllocKnownFlags});
  io.text("name", m.name, Text::kRegionName);
}

void walk(auto& io, Is<NamedOpen> auto& m) {
  io.number("flags", m.flags, KnownBits{kOpenKnownFlags});
  io.text("name", m.name, Text::kRegionName);
}

void walk(auto& io, Is<NamedUnlink> auto& m) { io.text("name", m.name, Text::kRegionName); }

void walk(auto& io, Is<RegionEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, id);
  io.enumeration("kind", m.kind, RegionKind::kNamed);
  CXLPOOL_PROTO_FIELDS(io, m, tier_id, size, owner_uid);
  io.number("mode", m.mode, PermissionBits{});
  CXLPOOL_PROTO_FIELDS(io, m, client_id, handles, resident_bytes);
  // Named regions are listed by name; leased ones have none.
  io.text("name", m.name, Text::kRegionNameOrEmpty);
  io.check("name", [&] {
    if (m.kind == RegionKind::kNamed && m.name.empty()) return std::string("empty for a named region");
    if (m.kind == RegionKind::kLeased && !m.name.empty()) return std::string("set for a leased region");
    return std::string();
  });
}

void walk(auto& io, Is<RegionsReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, regions); }

void walk(auto& io, Is<RegionMigrate> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, region_id, target_tier); }

void walk(auto& io, Is<MigrateReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, region_id, from_tier, to_tier, pages_total, pages_moved, pages_already,
                       pages_absent, pages_failed, bytes_moved, elapsed_ns);
}

void walk(auto& io, Is<ClientEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, id, pid, uid, gid, regions, bytes, connected_ns);
  io.text("name", m.name, Text::kClientName);  // the client's Hello.client_name
}

void walk(auto& io, Is<ClientsReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, clients); }

void walk(auto& io, Is<Counter> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, value, name); }

void walk(auto& io, Is<StatsReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, counters); }

void walk(auto& io, Is<BackendEntry> auto& m) {
  io.enumeration("state", m.state, BackendState::kFailed);
  CXLPOOL_PROTO_FIELDS(io, m, cls, name, detail);
}

void walk(auto& io, Is<BackendsReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, backends); }

// Zero passes: where it is not allowed, a range rule says so.
inline std::string power_of_two_problem(uint32_t n) {
  return (n & (n - 1)) == 0 ? std::string() : std::to_string(n) + " is not a power of two";
}

void walk(auto& io, Is<AccessRingOpen> auto& m) {
  io.number("entries", m.entries, Between<uint32_t>{0, kMaxAccessRingEntries});
  io.check("entries", [&] { return power_of_two_problem(m.entries); });
}

void walk(auto& io, Is<AccessRingReply> auto& m) {
  io.number("entries", m.entries, Between<uint32_t>{1, kMaxAccessRingEntries});
  io.check("entries", [&] { return power_of_two_problem(m.entries); });
  io.number("entry_size", m.entry_size, Between<uint32_t>{1, 4096});
  io.number("ring_bytes", m.ring_bytes, Positive{});
}

void walk(auto& io, Is<TieringTierEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, tier_id);
  io.enumeration("role", m.role, TierRole::kUnmanaged);
  CXLPOOL_PROTO_FIELDS(io, m, capacity_bytes, used_bytes, hot_pages, accesses, bandwidth_bps, promotions,
                       demotions, bytes_promoted, bytes_demoted, rate_limit_hits, name);
}

void walk(auto& io, Is<TieringSourceEntry> auto& m) {
  io.enumeration("state", m.state, BackendState::kFailed);
  CXLPOOL_PROTO_FIELDS(io, m, accesses, dropped, name, detail);
}

void walk(auto& io, Is<KnobEntry> auto& m) {
  io.text("key", m.key, Text::kKnob);
  io.text("value", m.value, Text::kKnobOrEmpty);
}

void walk(auto& io, Is<TieringStatusReply> auto& m) {
  io.number("enabled", m.enabled, Between<uint8_t>{0, 1});
  io.enumeration("nominator", m.nominator, Nominator::kHwt);
  CXLPOOL_PROTO_FIELDS(io, m, epoch, epoch_ns, promotion_period_ns, last_epoch_accesses, pages_moved,
                       pages_failed, detail, tiers, sources, knobs);
}

void walk(auto& io, Is<TieringHot> auto& m) {
  io.number("top", m.top, Between<uint32_t>{1, static_cast<uint32_t>(kMaxListEntries)});
}

void walk(auto& io, Is<HotPageEntry> auto& m) {
  io.enumeration("space", m.space, AccessSpace::kTrace);
  io.enumeration("page_class", m.page_class, PageClass::kSparse);
  io.number("touched_words", m.touched_words, Between<uint8_t>{0, 64});
  CXLPOOL_PROTO_FIELDS(io, m, tier_id, owner, address, count);
  io.check("address", [&] {
    return m.address % 4096 == 0 ? std::string() : std::string("not a multiple of 4096");
  });
}

void walk(auto& io, Is<TieringHotReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, epoch, pages); }

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
  return power_of_two_problem(n);
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
  CXLPOOL_PROTO_FIELDS(io, m, sq_entries, cq_entries, sq_slab_bytes, cq_slab_bytes, put_window_bytes);
  io.check("sq_entries", [&] { return zero_or(m.sq_entries, kv_entries_problem(m.sq_entries)); });
  io.check("cq_entries", [&] { return zero_or(m.cq_entries, kv_entries_problem(m.cq_entries)); });
  io.check("sq_slab_bytes", [&] { return zero_or(m.sq_slab_bytes, kv_slab_problem(m.sq_slab_bytes)); });
  io.check("cq_slab_bytes", [&] { return zero_or(m.cq_slab_bytes, kv_slab_problem(m.cq_slab_bytes)); });
  io.check("put_window_bytes", [&] { return page_multiple_problem(m.put_window_bytes); });
}

void walk(auto& io, Is<KvArenaEntry> auto& m) {
  io.number("tier", m.tier, Between<uint8_t>{0, 1});  // arenas hold the DRAM and CXL tiers only
  CXLPOOL_PROTO_FIELDS(io, m, pool_tier_id);
  io.number("bytes", m.bytes, Positive{});
  io.text("region_name", m.region_name, Text::kRegionName);
  io.check("bytes", [&] { return page_multiple_problem(m.bytes); });
}

void walk(auto& io, Is<KvOpenReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, sq_entries, cq_entries, sq_slab_bytes, cq_slab_bytes, ring_bytes,
                       put_window_bytes);
  io.number("slot_bytes", m.slot_bytes, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, quota_bytes, tier_bandwidth_bps, tier_latency_ns, arenas);
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
  CXLPOOL_PROTO_FIELDS(io, m, tp_rank);
  io.number("tp_size", m.tp_size, Positive{});
  io.number("chunk_tokens", m.chunk_tokens, Positive{});
  io.text("model_id", m.model_id, Text::kKvNamespace);
  io.text("layout", m.layout, Text::kKvNamespace);
  io.text("dtype", m.dtype, Text::kKvNamespace);
  io.number("mode", m.mode, Between<uint32_t>{0, 0666});
  io.check("mode", [&] { return (m.mode & ~0666u) == 0 ? std::string() : std::string("has bits outside 0666"); });
  io.check("tp_rank", [&] {
    return m.tp_rank < m.tp_size ? std::string()
                                 : std::to_string(m.tp_rank) + " is not below tp_size " + std::to_string(m.tp_size);
  });
}

void walk(auto& io, Is<KvNamespaceReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, namespace_id, fingerprint_hi, fingerprint_lo);
  io.number("chunk_tokens", m.chunk_tokens, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, owner_uid, owner_gid);
  io.number("mode", m.mode, Between<uint32_t>{0, 0666});
  io.number("rights", m.rights, Between<uint8_t>{0, 3});
}

void walk(auto& io, Is<KvTierStatus> auto& m) {
  io.number("tier", m.tier, Between<uint8_t>{0, kKvTierCountWire - 1});
  io.number("present", m.present, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, capacity_bytes, used_bytes, chunks, hits, misses, evictions, promotions,
                       demotions, admissions_rejected, bytes_written, bytes_read, errors, name);
}

void walk(auto& io, Is<KvStatusReply> auto& m) {
  io.number("enabled", m.enabled, Between<uint8_t>{0, 1});
  io.number("eviction", m.eviction, Between<uint8_t>{0, 1});
  io.number("ssd_sync", m.ssd_sync, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, admission_threshold, slot_bytes, chunks, index_capacity, lookups, lookup_keys,
                       lookup_hits, gets, puts, put_aborts, prefetches, deletes, leases, leased_bytes,
                       reservations, quota_rejections, ssd_durable_sequence, detail, tiers);
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
  CXLPOOL_PROTO_FIELDS(io, m, namespace_id, fingerprint_hi, fingerprint_lo, tp_rank, tp_size, chunk_tokens,
                       chunks, bytes, owner_uid, owner_gid);
  io.number("mode", m.mode, Between<uint32_t>{0, 0666});
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

void walk(auto& io, Is<KvNamespacesReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, namespaces); }

void walk(auto& io, Is<KvNamespaceDrop> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, namespace_id); }

void walk(auto& io, Is<KvNamespaceDropReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, chunks_dropped, chunks_deferred);
}

void walk(auto& io, Is<WeightsPath> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, path);
  io.check("path", [&] {
    return !m.path.empty() && m.path.front() == '/' ? std::string() : std::string("not an absolute path");
  });
}

void walk(auto& io, Is<WeightsLoad> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, tier_id, max_resident_bytes);
  io.text("model", m.model, Text::kWeightsModel);
  CXLPOOL_PROTO_FIELDS(io, m, paths);
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
  CXLPOOL_PROTO_FIELDS(io, m, tier_id);
  io.number("files", m.files, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, tensor_count, total_bytes, resident_bytes);
  io.number("region_bytes", m.region_bytes, Positive{});
  io.number("loaded", m.loaded, Between<uint8_t>{0, 1});
  io.text("region_name", m.region_name, Text::kRegionName);
  io.check("resident_bytes", [&] {
    return m.resident_bytes <= m.total_bytes && m.resident_bytes <= m.region_bytes
               ? std::string()
               : std::string("more than total_bytes or region_bytes");
  });
}

void walk(auto& io, Is<WeightsUnload> auto& m) { io.text("model", m.model, Text::kWeightsModel); }

void walk(auto& io, Is<WeightsUnloadReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, region_bytes); }

void walk(auto& io, Is<WeightsEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, tier_id);
  io.number("files", m.files, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, owner_uid, opens, tensor_count, total_bytes, resident_bytes, region_bytes);
  io.text("model", m.model, Text::kWeightsModel);
  io.text("region_name", m.region_name, Text::kRegionName);
  io.check("resident_bytes", [&] {
    return m.resident_bytes <= m.total_bytes ? std::string() : std::string("more than total_bytes");
  });
}

void walk(auto& io, Is<WeightsListReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, models); }

void walk(auto& io, Is<GpuHostAlloc> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, tier_id, device);
  io.number("bytes", m.bytes, Positive{});
}

void walk(auto& io, Is<GpuHostAllocReply> auto& m) {
  io.number("bytes", m.bytes, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, numa_node);
}

// ---------------------------------------------------------- device pool

inline std::string pod_problem(uint64_t slot_bytes, uint32_t link_slots, uint64_t pod_bytes) {
  if (slot_bytes == 0 || slot_bytes % 4096 != 0) return std::to_string(slot_bytes) + " is not a positive multiple of 4096";
  if (link_slots == 0) return std::string("no link slots");
  // The slots alone must fit in the file the engine maps.
  if (pod_bytes / slot_bytes < link_slots) {
    return std::to_string(link_slots) + " slots of " + std::to_string(slot_bytes) + " bytes do not fit in " +
           std::to_string(pod_bytes);
  }
  return std::string();
}

void walk_pod(auto& io, auto& m) {
  io.number("pod_bytes", m.pod_bytes, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, slot_bytes, link_slots);
  io.number("max_devices", m.max_devices, Positive{});
  io.number("max_attachments", m.max_attachments, Positive{});
  io.number("coherence", m.coherence, Between<uint8_t>{0, 1});
  io.check("slot_bytes", [&] { return pod_problem(m.slot_bytes, m.link_slots, m.pod_bytes); });
}

void walk(auto& io, Is<DevRegister> auto& m) {
  io.enumeration("kind", m.kind, DevKind::kBlk);
  io.number("capacity", m.capacity, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, iops, bandwidth_bps, mac);
  io.text("name", m.name, Text::kDeviceName);
  io.text("host", m.host, Text::kDeviceName);
  io.check("mac", [&] {
    bool zero = true;
    for (uint8_t b : m.mac) zero = zero && b == 0;
    return m.kind == DevKind::kBlk && !zero ? std::string("set for a block device") : std::string();
  });
}

void walk(auto& io, Is<DevRegisterReply> auto& m) {
  io.number("device_id", m.device_id, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, device_line);
  io.number("lease_ms", m.lease_ms, Positive{});
  io.number("telemetry_ms", m.telemetry_ms, Positive{});
  walk_pod(io, m);
  io.check("device_line", [&] {
    return m.device_line < m.max_devices ? std::string() : std::string("past max_devices");
  });
}

void walk(auto& io, Is<DevHeartbeat> auto& m) {
  io.number("device_id", m.device_id, Positive{});
  io.number("link_up", m.link_up, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, bytes_per_s, ops_per_s);
}

void walk(auto& io, Is<DevHeartbeatReply> auto& m) {
  io.enumeration("health", m.health, DevHealth::kDead);
  CXLPOOL_PROTO_FIELDS(io, m, lease_ms, table_version);
}

void walk(auto& io, Is<DevAttach> auto& m) {
  io.enumeration("kind", m.kind, DevKind::kBlk);
  io.text("host", m.host, Text::kDeviceName);
  io.text("preferred", m.preferred, Text::kDeviceNameOrEmpty);
  io.text("preferred_host", m.preferred_host, Text::kDeviceNameOrEmpty);
  io.check("preferred_host", [&] {
    return m.preferred.empty() && !m.preferred_host.empty() ? std::string("set without preferred") : std::string();
  });
}

void walk(auto& io, Is<DevAttachReply> auto& m) {
  io.number("attachment_id", m.attachment_id, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, line, generation);
  io.number("active", m.active, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, device, slot);
  walk_pod(io, m);
  io.check("device", [&] {
    return m.active <= 1 && m.device[m.active] == kNoDeviceId ? std::string("no device on the active leg")
                                                               : std::string();
  });
  io.check("slot", [&] {
    for (uint32_t s : m.slot) {
      if (s >= m.link_slots) return std::to_string(s) + " past link_slots " + std::to_string(m.link_slots);
    }
    return std::string();
  });
  io.check("line", [&] { return m.line < m.max_attachments ? std::string() : std::string("past max_attachments"); });
}

void walk(auto& io, Is<DevDetach> auto& m) { io.number("attachment_id", m.attachment_id, Positive{}); }

void walk(auto& io, Is<DevDeviceEntry> auto& m) {
  io.number("id", m.id, Positive{});
  io.enumeration("kind", m.kind, DevKind::kBlk);
  io.enumeration("health", m.health, DevHealth::kDead);
  CXLPOOL_PROTO_FIELDS(io, m, capacity, iops, bandwidth_bps, mac, load_ppm, bytes_per_s, ops_per_s, samples,
                       primaries, backups, lease_left_ms, client_id);
  io.text("name", m.name, Text::kDeviceName);
  io.text("host", m.host, Text::kDeviceName);
}

void walk(auto& io, Is<DevAttachmentEntry> auto& m) {
  io.number("id", m.id, Positive{});
  io.enumeration("kind", m.kind, DevKind::kBlk);
  io.number("active", m.active, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, generation, device, slot, client_id);
  io.text("host", m.host, Text::kDeviceName);
}

void walk(auto& io, Is<DevListReply> auto& m) {
  io.number("enabled", m.enabled, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, failovers, table_version, pod_path, devices, attachments, state_backend);
  io.number("state_connected", m.state_connected, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, state_error);
}

void walk(auto& io, Is<DevFailover> auto& m) { io.number("device_id", m.device_id, Positive{}); }

void walk(auto& io, Is<DevFailoverReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, device_id, moved, without_backup);
}

// ---------------------------------------------------------- checkpoints

void walk(auto& io, Is<CkptCreate> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, pid, tier_id);
  io.number("flags", m.flags, KnownBits{kCkptKnownFlags});
  io.text("name", m.name, Text::kCkptName);
}

void walk(auto& io, Is<CkptEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, region_id);
  io.number("image_bytes", m.image_bytes, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, created_unix_ns, capture_ns, tier_id, owner_uid, pid);
  io.number("threads", m.threads, Positive{});
  CXLPOOL_PROTO_FIELDS(io, m, restores);
  io.text("name", m.name, Text::kCkptName);
}

void walk(auto& io, Is<CkptListReply> auto& m) { CXLPOOL_PROTO_FIELDS(io, m, checkpoints); }

void walk(auto& io, Is<CkptRestore> auto& m) {
  io.enumeration("policy", m.policy, CkptPolicy::kHybrid);
  io.number("count", m.count, Between<uint32_t>{1, kMaxCkptClones});
  io.text("name", m.name, Text::kCkptName);
}

void walk(auto& io, Is<CkptClone> auto& m) {
  io.number("pid", m.pid, Positive{});
  io.number("keeper", m.keeper, Positive{});
  io.number("ns_pid", m.ns_pid, Positive{});
}

void walk(auto& io, Is<CkptRestoreReply> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, restore_ns, clones);
  io.check("clones", [&] {
    return m.clones.size() <= kMaxCkptClones ? std::string()
                                             : std::to_string(m.clones.size()) + " clones, at most " +
                                                   std::to_string(kMaxCkptClones);
  });
}

void walk(auto& io, Is<CkptRemove> auto& m) { io.text("name", m.name, Text::kCkptName); }

// ---------------------------------------------------------- pods

void walk(auto& io, Is<PodMemberEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, lease_id, exported_bytes, revision);
  io.number("self", m.self, Between<uint8_t>{0, 1});
  io.text("host", m.host, Text::kDeviceName);
  CXLPOOL_PROTO_FIELDS(io, m, provider, address, tiers, devices);
}

void walk(auto& io, Is<PodRailEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, bytes_read, bytes_written, chunks, failures, resets);
  io.number("up", m.up, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, provider, address);
}

void walk(auto& io, Is<PodPeerEntry> auto& m) {
  CXLPOOL_PROTO_FIELDS(io, m, fetched_chunks, fetched_bytes, fetch_errors, retries, pins_served);
  io.text("host", m.host, Text::kDeviceName);
}

void walk(auto& io, Is<PodStatusReply> auto& m) {
  io.enumeration("backend", m.backend, PodBackend::kEtcd);
  io.number("connected", m.connected, Between<uint8_t>{0, 1});
  CXLPOOL_PROTO_FIELDS(io, m, lease_ttl_s, lease_id, joins, departures, etcd_errors);
  io.text("pod", m.pod, Text::kDeviceName);
  io.text("host", m.host, Text::kDeviceName);
  CXLPOOL_PROTO_FIELDS(io, m, endpoints, last_error, members, fabric, fabric_error, transfer_requests,
                       transfer_failures, chunks_retried, checksum_mismatches, kv_remote_gets, kv_remote_hits,
                       kv_remote_misses, kv_remote_bytes, kv_remote_errors, kv_pins_served, kv_replications_sent,
                       kv_replicated_chunks, kv_replication_errors, kv_replication_dropped, rails, peers);
}

// ---------------------------------------------------------- restored leases

void walk(auto& io, Is<RegionAlias> auto& m) {
  io.number("region_id", m.region_id, Positive{});
  io.number("alias", m.alias, Positive{});
  io.check("alias", [&] { return m.alias == m.region_id ? std::string("the region's own id") : std::string(); });
}

}  // namespace cxlpool::proto::fields
