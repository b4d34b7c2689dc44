// SPDX-License-Identifier: Apache-2.0
// The KV-store control messages (50-59): wire layout as docs/protocol.md
// states it, round trips of the boundary values, and one rejection per rule.
// Each invalid message is checked twice: the encoder refuses it (EINVAL) and
// the decoder refuses the same fields written byte by byte (EPROTO), both
// naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec_checks.hpp"
#include "cxlpool/proto/kv_ring.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;

// ---- independent writers of the documented layout ----

Bytes wire(const KvOpen& m) {
  return Bytes().u32(m.sq_entries).u32(m.cq_entries).u32(m.sq_slab_bytes).u32(m.cq_slab_bytes).u64(
      m.put_window_bytes);
}

Bytes wire(const KvOpenReply& m) {
  Bytes b;
  b.u32(m.sq_entries).u32(m.cq_entries).u32(m.sq_slab_bytes).u32(m.cq_slab_bytes);
  b.u64(m.ring_bytes).u64(m.put_window_bytes).u64(m.slot_bytes).u64(m.quota_bytes);
  for (const uint64_t v : m.tier_bandwidth_bps) b.u64(v);
  for (const uint64_t v : m.tier_latency_ns) b.u64(v);
  b.u32(static_cast<uint32_t>(m.arenas.size()));
  for (const KvArenaEntry& a : m.arenas) b.u8(a.tier).u32(a.pool_tier_id).u64(a.bytes).str(a.region_name);
  return b;
}

Bytes wire(const KvNamespaceOpen& m) {
  return Bytes().u32(m.tp_rank).u32(m.tp_size).u32(m.chunk_tokens).str(m.model_id).str(m.layout).str(m.dtype).u32(m.mode);
}

Bytes wire(const KvNamespaceReply& m) {
  return Bytes()
      .u64(m.namespace_id)
      .u64(m.fingerprint_hi)
      .u64(m.fingerprint_lo)
      .u32(m.chunk_tokens)
      .u32(m.owner_uid)
      .u32(m.owner_gid)
      .u32(m.mode)
      .u8(m.rights);
}

Bytes wire(const KvStatusReply& m) {
  Bytes b;
  b.u8(m.enabled).u8(m.eviction).u8(m.ssd_sync).u32(m.admission_threshold);
  for (const uint64_t v : {m.slot_bytes, m.chunks, m.index_capacity, m.lookups, m.lookup_keys, m.lookup_hits,
                           m.gets, m.puts, m.put_aborts, m.prefetches, m.deletes, m.leases, m.leased_bytes,
                           m.reservations, m.quota_rejections, m.ssd_durable_sequence}) {
    b.u64(v);
  }
  b.str(m.detail).u32(static_cast<uint32_t>(m.tiers.size()));
  for (const KvTierStatus& t : m.tiers) {
    b.u8(t.tier).u8(t.present);
    for (const uint64_t v : {t.capacity_bytes, t.used_bytes, t.chunks, t.hits, t.misses, t.evictions,
                             t.promotions, t.demotions, t.admissions_rejected, t.bytes_written, t.bytes_read,
                             t.errors}) {
      b.u64(v);
    }
    b.str(t.name);
  }
  return b;
}

Bytes wire(const KvNamespacesReply& m) {
  Bytes b;
  b.u32(static_cast<uint32_t>(m.namespaces.size()));
  for (const KvNamespaceEntry& e : m.namespaces) {
    b.u64(e.namespace_id).u64(e.fingerprint_hi).u64(e.fingerprint_lo);
    b.u32(e.tp_rank).u32(e.tp_size).u32(e.chunk_tokens);
    for (const uint64_t v : e.chunks) b.u64(v);
    for (const uint64_t v : e.bytes) b.u64(v);
    b.u32(e.owner_uid).u32(e.owner_gid).u32(e.mode);
    b.str(e.model_id).str(e.layout).str(e.dtype);
  }
  return b;
}

Bytes wire(const KvNamespaceDrop& m) { return Bytes().u64(m.namespace_id); }

Bytes wire(const KvNamespaceDropReply& m) { return Bytes().u64(m.chunks_dropped).u64(m.chunks_deferred); }

Bytes wire(const KvStatusRequest&) { return Bytes(); }
Bytes wire(const KvNamespacesRequest&) { return Bytes(); }

template <typename T>
std::vector<std::byte> wire_datagram(const T& m, uint32_t request_id = 7) {
  return datagram(message_type(Message(m)), wire(m), 1, request_id);
}

// Empty for the message types written elsewhere.
std::vector<std::byte> wire_of(const Message& message, uint32_t request_id = 7) {
  return std::visit(
      [&](const auto& m) -> std::vector<std::byte> {
        if constexpr (requires { wire(m); }) {
          return wire_datagram(m, request_id);
        } else {
          return {};
        }
      },
      message);
}

// ---- valid messages to start from ----

constexpr KvRingGeometry kGeometry{256, 512, 1u << 20, 1u << 19};

KvOpenReply open_reply() {
  return KvOpenReply{.sq_entries = kGeometry.sq_entries,
                     .cq_entries = kGeometry.cq_entries,
                     .sq_slab_bytes = kGeometry.sq_slab_bytes,
                     .cq_slab_bytes = kGeometry.cq_slab_bytes,
                     .ring_bytes = kv_ring_layout(kGeometry).total_bytes,
                     .put_window_bytes = 64ull << 20,
                     .slot_bytes = 2ull << 20,
                     .quota_bytes = 0,
                     .tier_bandwidth_bps = {1, 2, 3},
                     .tier_latency_ns = {4, 5, 6},
                     .arenas = {KvArenaEntry{.tier = 0, .pool_tier_id = 0, .bytes = 4ull << 20,
                                             .region_name = "cxlpool-kv-dram"},
                                KvArenaEntry{.tier = 1, .pool_tier_id = 3, .bytes = 2ull << 20,
                                             .region_name = "cxlpool-kv-cxl"}}};
}

KvNamespaceOpen ns_open() {
  return KvNamespaceOpen{.model_id = "m", .layout = "l", .dtype = "bf16", .tp_rank = 0, .tp_size = 1,
                         .chunk_tokens = 256};
}

KvTierStatus tier_status(uint8_t tier) {
  return KvTierStatus{.tier = tier, .present = 1, .capacity_bytes = 8192, .used_bytes = 4096, .name = "t"};
}

KvStatusReply status_reply() {
  return KvStatusReply{.enabled = 1, .slot_bytes = 4096, .tiers = {tier_status(0), tier_status(2)}};
}

KvNamespaceEntry ns_entry() {
  return KvNamespaceEntry{.namespace_id = 3, .tp_rank = 1, .tp_size = 2, .chunk_tokens = 16,
                          .model_id = "m", .layout = "l", .dtype = "fp8"};
}

// ---- layout ----

TEST(KvMessagesLayout, EncoderWritesTheDocumentedBytes) {
  const std::vector<Message> messages = {
      KvOpen{.sq_entries = 8, .cq_entries = 16, .sq_slab_bytes = 256, .cq_slab_bytes = 512,
             .put_window_bytes = 1ull << 32},
      open_reply(),
      ns_open(),
      KvNamespaceReply{.namespace_id = 9, .fingerprint_hi = 1, .fingerprint_lo = 2, .chunk_tokens = 3},
      KvStatusRequest{},
      status_reply(),
      KvNamespacesRequest{},
      KvNamespacesReply{.namespaces = {ns_entry(), KvNamespaceEntry{.namespace_id = 4}}},
      KvNamespaceDrop{.namespace_id = 0x0102030405060708},
      KvNamespaceDropReply{.chunks_dropped = 5, .chunks_deferred = 6},
  };
  for (const Message& m : messages) {
    SCOPED_TRACE(message_type_name(message_type(m)));
    testing::expect_wire_form(m, wire_of(m, 11), 11);
  }
}

TEST(KvMessagesLayout, FixedOffsetsOfKvOpenReply) {
  auto bytes = encode(1, open_reply());
  ASSERT_TRUE(bytes);
  // header 16 + 4 u32 + 4 u64 + 6 u64 = 16 + 16 + 32 + 48: the arena count is at 112.
  ASSERT_GT(bytes->size(), 116u);
  EXPECT_EQ(std::to_integer<uint8_t>((*bytes)[112]), 2);
  EXPECT_EQ(std::to_integer<uint8_t>((*bytes)[116]), 0);  // arenas[0].tier
}

TEST(KvMessages, DescriptorCounts) {
  EXPECT_EQ(descriptor_count(MsgType::kKvOpenReply), 4u);
  EXPECT_LE(descriptor_count(MsgType::kKvOpenReply), kMaxFdsPerMessage);
  EXPECT_EQ(descriptor_count(MsgType::kKvNamespaceReply), 2u) << "at most: the views of a reader";
  for (MsgType t : {MsgType::kKvOpen, MsgType::kKvNamespaceOpen, MsgType::kKvStatus,
                    MsgType::kKvStatusReply, MsgType::kKvNamespaces, MsgType::kKvNamespacesReply,
                    MsgType::kKvNamespaceDrop, MsgType::kKvNamespaceDropReply}) {
    EXPECT_EQ(descriptor_count(t), 0u) << message_type_name(t);
  }
}

// ---- boundary values that are valid ----

TEST(KvMessages, BoundaryValuesRoundTrip) {
  KvOpenReply max_ring = open_reply();
  max_ring.sq_entries = max_ring.cq_entries = kKvRingMaxEntries;
  max_ring.sq_slab_bytes = max_ring.cq_slab_bytes = kKvSlabMaxBytes;
  max_ring.ring_bytes =
      kv_ring_layout({kKvRingMaxEntries, kKvRingMaxEntries, kKvSlabMaxBytes, kKvSlabMaxBytes}).total_bytes;
  max_ring.put_window_bytes = 0;  // this connection may not put
  KvOpenReply dram_only = open_reply();
  dram_only.arenas.pop_back();
  dram_only.arenas[0].bytes = dram_only.slot_bytes;  // exactly one slot

  KvNamespaceOpen long_utf8 = ns_open();
  long_utf8.model_id = std::string(kMaxKvNamespaceField - 2, 'x') + "\xc3\xa9";  // é, 256 bytes
  long_utf8.tp_rank = 7;
  long_utf8.tp_size = 8;

  const std::vector<Message> messages = {
      KvOpen{},  // every field: the daemon's default
      KvOpen{.sq_entries = kKvRingMinEntries, .cq_entries = kKvRingMaxEntries, .sq_slab_bytes = kKvSlabMinBytes,
             .cq_slab_bytes = kKvSlabMaxBytes, .put_window_bytes = 4096},
      max_ring,
      dram_only,
      long_utf8,
      KvNamespaceReply{.chunk_tokens = 1},
      KvStatusReply{},  // disabled: all zero
      KvStatusReply{.enabled = 1, .eviction = 1, .ssd_sync = 1, .slot_bytes = 4096,
                    .tiers = {tier_status(2), tier_status(1), tier_status(0)}},
      KvNamespacesReply{},
      // Recovered from SSD: fingerprint only, whatever its numbers.
      KvNamespacesReply{.namespaces = {KvNamespaceEntry{.namespace_id = 1, .tp_rank = 5, .tp_size = 0}}},
      KvNamespaceDrop{},
      KvNamespaceDropReply{},
  };
  for (const Message& m : messages) {
    SCOPED_TRACE(message_type_name(message_type(m)));
    testing::expect_round_trip(m, 1);
  }
}

TEST(KvMessages, DefaultRepliesThatBreakARuleAreRefused) {
  EXPECT_EQ(encode(1, KvOpenReply{}).error().code, EINVAL);
  EXPECT_EQ(encode(1, KvNamespaceOpen{}).error().code, EINVAL);
  EXPECT_EQ(encode(1, KvNamespaceReply{}).error().code, EINVAL);
}

// ---- one rule broken at a time ----

struct KvRejectCase {
  std::string label;
  Message message;
  std::string needle;
};
void PrintTo(const KvRejectCase& c, std::ostream* os) { *os << c.label; }

template <typename T, typename F>
T with(T m, F&& change) {
  change(m);
  return m;
}

std::vector<KvRejectCase> reject_cases() {
  using R = KvOpenReply;
  using N = KvNamespaceOpen;
  using S = KvStatusReply;
  return {
      // KvOpen: 0 or a valid geometry value.
      {"OpenSqEntriesOne", KvOpen{.sq_entries = 1}, "KvOpen.sq_entries: 1 outside [2, 65536]"},
      {"OpenSqEntriesOdd", KvOpen{.sq_entries = 48}, "KvOpen.sq_entries: 48 is not a power of two"},
      {"OpenSqEntriesTooMany", KvOpen{.sq_entries = 1u << 17}, "KvOpen.sq_entries"},
      {"OpenCqEntriesOdd", KvOpen{.cq_entries = 3}, "KvOpen.cq_entries"},
      {"OpenSqSlabSmall", KvOpen{.sq_slab_bytes = 192}, "KvOpen.sq_slab_bytes: 192 outside"},
      {"OpenSqSlabUnaligned", KvOpen{.sq_slab_bytes = 300}, "KvOpen.sq_slab_bytes: 300 is not a multiple of 64"},
      {"OpenCqSlabLarge", KvOpen{.cq_slab_bytes = kKvSlabMaxBytes + 64}, "KvOpen.cq_slab_bytes"},
      {"OpenPutWindowUnaligned", KvOpen{.put_window_bytes = 4097}, "KvOpen.put_window_bytes"},
      // KvOpenReply.
      {"ReplySqEntriesZero", with(open_reply(), [](R& m) { m.sq_entries = 0; }), "KvOpenReply.sq_entries"},
      {"ReplyCqEntriesOdd", with(open_reply(), [](R& m) { m.cq_entries = 6; }), "KvOpenReply.cq_entries"},
      {"ReplySqSlabZero", with(open_reply(), [](R& m) { m.sq_slab_bytes = 0; }), "KvOpenReply.sq_slab_bytes"},
      {"ReplyCqSlabUnaligned", with(open_reply(), [](R& m) { m.cq_slab_bytes = 1000; }),
       "KvOpenReply.cq_slab_bytes"},
      {"ReplyRingBytesShort", with(open_reply(), [](R& m) { m.ring_bytes -= 64; }),
       "KvOpenReply.ring_bytes: " + std::to_string(kv_ring_layout(kGeometry).total_bytes - 64) +
           " but the ring geometry needs"},
      {"ReplyRingBytesLong", with(open_reply(), [](R& m) { m.ring_bytes += 4096; }), "KvOpenReply.ring_bytes"},
      {"ReplyPutWindowUnaligned", with(open_reply(), [](R& m) { m.put_window_bytes = 100; }),
       "KvOpenReply.put_window_bytes"},
      {"ReplySlotZero", with(open_reply(), [](R& m) { m.slot_bytes = 0; }), "KvOpenReply.slot_bytes"},
      {"ReplySlotUnaligned", with(open_reply(), [](R& m) { m.slot_bytes = 6000; }),
       "KvOpenReply.slot_bytes: 6000 is not a multiple of 4096"},
      {"ReplyNoArena", with(open_reply(), [](R& m) { m.arenas.clear(); }), "KvOpenReply.arenas: no DRAM arena"},
      {"ReplyCxlOnly", with(open_reply(), [](R& m) { m.arenas.erase(m.arenas.begin()); }),
       "KvOpenReply.arenas: no DRAM arena"},
      {"ReplyArenaTwice", with(open_reply(), [](R& m) { m.arenas[1].tier = 0; }),
       "KvOpenReply.arenas: tier 0 listed twice"},
      {"ReplyArenaBelowSlot", with(open_reply(), [](R& m) { m.arenas[1].bytes = 1ull << 20; }),
       "KvOpenReply.arenas: tier 1 arena of 1048576 bytes is smaller than one slot"},
      {"ReplyArenaSsdTier", with(open_reply(), [](R& m) { m.arenas[1].tier = 2; }),
       "KvOpenReply.arenas[1].tier: 2 outside [0, 1]"},
      {"ReplyArenaBytesZero", with(open_reply(), [](R& m) { m.arenas[0].bytes = 0; }),
       "KvOpenReply.arenas[0].bytes: must be greater than 0"},
      {"ReplyArenaBytesUnaligned", with(open_reply(), [](R& m) { m.arenas[0].bytes = (4ull << 20) + 1; }),
       "KvOpenReply.arenas[0].bytes"},
      {"ReplyArenaNameEmpty", with(open_reply(), [](R& m) { m.arenas[0].region_name = ""; }),
       "KvOpenReply.arenas[0].region_name"},
      {"ReplyArenaNameSlash", with(open_reply(), [](R& m) { m.arenas[1].region_name = "kv/cxl"; }),
       "KvOpenReply.arenas[1].region_name"},
      // KvNamespaceOpen.
      {"NsModelEmpty", with(ns_open(), [](N& m) { m.model_id = ""; }), "KvNamespaceOpen.model_id: empty"},
      {"NsModelTooLong", with(ns_open(), [](N& m) { m.model_id = std::string(kMaxKvNamespaceField + 1, 'm'); }),
       "KvNamespaceOpen.model_id: length 257 exceeds the limit of 256"},
      {"NsModelNul", with(ns_open(), [](N& m) { m.model_id = std::string("a\0b", 3); }),
       "KvNamespaceOpen.model_id: control byte 0x0 at offset 1"},
      {"NsLayoutEmpty", with(ns_open(), [](N& m) { m.layout = ""; }), "KvNamespaceOpen.layout: empty"},
      {"NsLayoutEscape", with(ns_open(), [](N& m) { m.layout = "\x1b[2J"; }), "KvNamespaceOpen.layout"},
      {"NsDtypeEmpty", with(ns_open(), [](N& m) { m.dtype = ""; }), "KvNamespaceOpen.dtype: empty"},
      {"NsDtypeDel", with(ns_open(), [](N& m) { m.dtype = "bf\x7f"; }), "KvNamespaceOpen.dtype: control byte 0x7f"},
      {"NsTpSizeZero", with(ns_open(), [](N& m) { m.tp_size = 0; }), "KvNamespaceOpen.tp_size"},
      {"NsTpRankAtSize", with(ns_open(), [](N& m) { m.tp_rank = 1; }),
       "KvNamespaceOpen.tp_rank: 1 is not below tp_size 1"},
      {"NsChunkTokensZero", with(ns_open(), [](N& m) { m.chunk_tokens = 0; }), "KvNamespaceOpen.chunk_tokens"},
      {"NsModeExecute", with(ns_open(), [](N& m) { m.mode = 0700; }), "KvNamespaceOpen.mode"},
      {"NsModeOddBit", with(ns_open(), [](N& m) { m.mode = 0641; }), "KvNamespaceOpen.mode: has bits outside 0666"},
      // KvNamespaceReply.
      {"NsReplyChunkTokensZero", KvNamespaceReply{.namespace_id = 1}, "KvNamespaceReply.chunk_tokens"},
      {"NsReplyRights", KvNamespaceReply{.namespace_id = 1, .chunk_tokens = 1, .rights = 4},
       "KvNamespaceReply.rights"},
      // KvStatusReply.
      {"StatusEnabled", KvStatusReply{.enabled = 2}, "KvStatusReply.enabled: 2 outside [0, 1]"},
      {"StatusEviction", KvStatusReply{.eviction = 2}, "KvStatusReply.eviction"},
      {"StatusSsdSync", KvStatusReply{.ssd_sync = 3}, "KvStatusReply.ssd_sync"},
      {"StatusSlotZeroWhileEnabled", KvStatusReply{.enabled = 1}, "KvStatusReply.slot_bytes: 0 while enabled"},
      {"StatusSlotUnaligned", KvStatusReply{.slot_bytes = 512}, "KvStatusReply.slot_bytes"},
      {"StatusDetailNul", with(status_reply(), [](S& m) { m.detail = std::string("a\0", 2); }),
       "KvStatusReply.detail"},
      {"StatusFourTiers", with(status_reply(), [](S& m) { m.tiers = {tier_status(0), tier_status(1),
                                                                      tier_status(2), tier_status(2)}; }),
       "KvStatusReply.tiers: 4 entries, at most 3"},
      {"StatusTierTwice", with(status_reply(), [](S& m) { m.tiers[1].tier = 0; }),
       "KvStatusReply.tiers: tier 0 listed twice"},
      {"StatusTierUnknown", with(status_reply(), [](S& m) { m.tiers[0].tier = 3; }),
       "KvStatusReply.tiers[0].tier: 3 outside [0, 2]"},
      {"StatusTierPresent", with(status_reply(), [](S& m) { m.tiers[1].present = 2; }),
       "KvStatusReply.tiers[1].present"},
      {"StatusTierNameTooLong", with(status_reply(), [](S& m) { m.tiers[0].name = std::string(4097, 'n'); }),
       "KvStatusReply.tiers[0].name"},
      // KvNamespacesReply.
      {"EntryPartialSpec",
       KvNamespacesReply{.namespaces = {with(ns_entry(), [](KvNamespaceEntry& e) { e.layout = ""; })}},
       "KvNamespacesReply.namespaces[0].model_id: model_id, layout and dtype must be all set or all empty"},
      {"EntryTpRank",
       KvNamespacesReply{.namespaces = {ns_entry(), with(ns_entry(), [](KvNamespaceEntry& e) { e.tp_rank = 2; })}},
       "KvNamespacesReply.namespaces[1].model_id: tp_rank 2 is not below tp_size 2"},
      {"EntryTpSizeZero",
       KvNamespacesReply{.namespaces = {with(ns_entry(), [](KvNamespaceEntry& e) { e.tp_size = 0; })}},
       "KvNamespacesReply.namespaces[0].model_id: tp_size and chunk_tokens must be positive"},
      {"EntryChunkTokensZero",
       KvNamespacesReply{.namespaces = {with(ns_entry(), [](KvNamespaceEntry& e) { e.chunk_tokens = 0; })}},
       "tp_size and chunk_tokens must be positive"},
      {"EntryDtypeControl",
       KvNamespacesReply{.namespaces = {with(ns_entry(), [](KvNamespaceEntry& e) { e.dtype = "f\n"; })}},
       "KvNamespacesReply.namespaces[0].dtype: control byte 0xa"},
      {"EntryModelTooLong",
       KvNamespacesReply{.namespaces = {with(ns_entry(), [](KvNamespaceEntry& e) { e.model_id = std::string(300, 'm'); })}},
       "KvNamespacesReply.namespaces[0].model_id: length 300"},
  };
}

class KvReject : public ::testing::TestWithParam<KvRejectCase> {};

TEST_P(KvReject, EncoderRefusesWithEinval) { testing::expect_encode_refused(GetParam().message, GetParam().needle); }

TEST_P(KvReject, DecoderRefusesTheSameBytesWithEproto) {
  const KvRejectCase& c = GetParam();
  const auto bytes = wire_of(c.message);
  ASSERT_FALSE(bytes.empty());
  testing::expect_decode_refused(bytes, EPROTO, c.needle);
}

INSTANTIATE_TEST_SUITE_P(Rules, KvReject, ::testing::ValuesIn(reject_cases()), testing::CaseLabel());

// ---- malformed framing that only the decoder sees ----

struct FramingCase {
  std::string label;
  std::vector<std::byte> bytes;
  std::string needle;
};
void PrintTo(const FramingCase& c, std::ostream* os) { *os << c.label; }

std::vector<std::byte> chopped(std::vector<std::byte> d, size_t n) {
  d.resize(d.size() - n);
  testing::patch_u32(d, 12, static_cast<uint32_t>(d.size() - kHeaderSize));
  return d;
}

std::vector<FramingCase> framing_cases() {
  Bytes open_reply_many = wire(open_reply());
  Bytes ns_reply_huge;
  ns_reply_huge.u32(static_cast<uint32_t>(kMaxListEntries + 1));
  Bytes ns_reply_beyond;
  ns_reply_beyond.u32(3);
  Bytes name_beyond = wire(ns_open());
  return {
      {"OpenTruncated", chopped(wire_datagram(KvOpen{}), 1), "KvOpen.put_window_bytes: truncated"},
      {"OpenTrailing", datagram(MsgType::kKvOpen, wire(KvOpen{}).u8(0)), "trailing bytes"},
      {"OpenReplyCutInArena", chopped(wire_datagram(open_reply()), 3), "KvOpenReply.arenas[1].region_name"},
      {"OpenReplyTrailing", datagram(MsgType::kKvOpenReply, open_reply_many.u32(0)), "trailing bytes"},
      // The mode (4 bytes) and the last byte of dtype cut off.
      {"NsOpenStringBeyond", chopped(wire_datagram(ns_open()), 5), "KvNamespaceOpen.dtype: length 4"},
      {"NsOpenTrailing", datagram(MsgType::kKvNamespaceOpen, name_beyond.u8(1)), "trailing bytes"},
      // rights, mode, owner_gid, owner_uid (13 bytes) and half of chunk_tokens.
      {"NsReplyTruncated", chopped(wire_datagram(KvNamespaceReply{.chunk_tokens = 1}), 15),
       "KvNamespaceReply.chunk_tokens: truncated"},
      {"StatusReplyTruncated", chopped(wire_datagram(status_reply()), 1),
       "KvStatusReply.tiers[1].name: length 1 but only 0 bytes left"},
      {"NamespacesOverLimit", datagram(MsgType::kKvNamespacesReply, ns_reply_huge),
       "KvNamespacesReply.namespaces: 1025 entries exceed"},
      {"NamespacesBeyondBytes", datagram(MsgType::kKvNamespacesReply, ns_reply_beyond),
       "KvNamespacesReply.namespaces: 3 entries cannot fit"},
      {"DropTruncated", datagram(MsgType::kKvNamespaceDrop, Bytes().u32(1)), "KvNamespaceDrop.namespace_id"},
      {"DropTrailing", datagram(MsgType::kKvNamespaceDrop, Bytes().u64(1).u8(0)), "trailing bytes"},
      {"DropReplyTruncated", datagram(MsgType::kKvNamespaceDropReply, Bytes().u64(1)),
       "KvNamespaceDropReply.chunks_deferred"},
      {"StatusRequestWithPayload", datagram(MsgType::kKvStatus, Bytes().u8(0)), "header.payload_length"},
      {"NamespacesRequestWithPayload", datagram(MsgType::kKvNamespaces, Bytes().u32(0)), "header.payload_length"},
  };
}

class KvFraming : public ::testing::TestWithParam<FramingCase> {};

TEST_P(KvFraming, DecoderRefusesWithEproto) {
  testing::expect_decode_refused(GetParam().bytes, EPROTO, GetParam().needle);
}

INSTANTIATE_TEST_SUITE_P(Framing, KvFraming, ::testing::ValuesIn(framing_cases()), testing::CaseLabel());

TEST(KvMessages, RepliesUpToTheListLimitFitInOneMessage) {
  // Entries with the longest spec strings: this many fit in one message, one
  // more is EMSGSIZE (the daemon caps a listing, docs/protocol.md).
  KvNamespacesReply reply;
  KvNamespaceEntry big = ns_entry();
  big.model_id = std::string(kMaxKvNamespaceField, 'm');
  big.layout = std::string(kMaxKvNamespaceField, 'l');
  big.dtype = std::string(kMaxKvNamespaceField, 'd');
  const size_t entry_bytes = 3 * 8 + 3 * 4 + 6 * 8 + 3 * 4 + 3 * (2 + kMaxKvNamespaceField);
  const size_t fitting = (kMaxMessageSize - kHeaderSize - 4) / entry_bytes;
  reply.namespaces.assign(fitting, big);
  auto bytes = encode(1, reply);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(bytes->size(), kHeaderSize + 4 + fitting * entry_bytes);
  reply.namespaces.push_back(big);
  EXPECT_EQ(encode(1, reply).error().code, EMSGSIZE);
}

}  // namespace
}  // namespace cxlpool::proto
