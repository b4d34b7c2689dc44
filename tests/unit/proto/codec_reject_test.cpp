// SPDX-License-Identifier: Apache-2.0
// Decoder rejection, one malformed field at a time. Each payload builder
// below produces a valid payload with its defaults (checked by
// BuildersProduceValidMessages); every case changes one field and expects
// the specific errno and an error message that names the field.
#include <gtest/gtest.h>

#include <string>

#include "codec_checks.hpp"
#include "cxlpool/proto/messages.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;

// ---- payload builders, in the documented wire order ----

struct HelloP {
  uint16_t min = 1;
  uint16_t max = 1;
  std::string name = "client";
};
Bytes build(const HelloP& p) { return Bytes().u16(p.min).u16(p.max).str(p.name); }

struct HelloReplyP {
  uint16_t version = 1;
  uint32_t max_message_size = 65536;
  std::string daemon_version = "0.1.0";
};
Bytes build(const HelloReplyP& p) {
  return Bytes().u16(p.version).u64(12).u32(64).u32(p.max_message_size).str(p.daemon_version);
}

struct ErrorP {
  int32_t code = EEXIST;
  std::string message = "name taken";
};
Bytes build(const ErrorP& p) { return Bytes().i32(p.code).str(p.message); }

struct StatusReplyP {
  std::string state_dir = "/run/cxlpool";
  std::string config_source = "embedded default";
};
Bytes build(const StatusReplyP& p) {
  return Bytes().u32(1).u64(2).u32(3).u32(4).u64(5).str("0.1.0").str(p.state_dir).str(p.config_source);
}

struct TierP {
  uint8_t kind = 1;
  int32_t numa_node = -1;
  std::string name = "cxl0";
};
Bytes& add(Bytes& b, const TierP& p) {
  return b.u32(1).u8(p.kind).i32(p.numa_node).u64(100).u64(40).u64(60).u32(300).u32(1000).u32(4096).str(
      p.name);
}
struct TiersP {
  std::vector<TierP> tiers = {TierP{}, TierP{.kind = 0, .numa_node = 0, .name = "dram"}};
  int64_t count = -1;  // -1: the number of entries
};
Bytes build(const TiersP& p) {
  Bytes b;
  b.u32(p.count < 0 ? static_cast<uint32_t>(p.tiers.size()) : static_cast<uint32_t>(p.count));
  for (const TierP& t : p.tiers) add(b, t);
  return b;
}

struct AllocP {
  uint64_t size = 4096;
  uint32_t flags = kAllocHugetlb;
};
Bytes build(const AllocP& p) { return Bytes().u32(0).u64(p.size).u32(p.flags); }

struct RegionReplyP {
  uint32_t flags = kRegionWritable;
  std::string name = "weights";
};
Bytes build(const RegionReplyP& p) {
  return Bytes().u64(3).u32(0).u64(8192).u32(4096).u32(p.flags).str(p.name);
}

struct CreateP {
  uint64_t size = 1 << 20;
  uint32_t mode = 0640;
  uint32_t flags = 0;
  std::string name = "weights.bin";
};
Bytes build(const CreateP& p) { return Bytes().u32(1).u64(p.size).u32(p.mode).u32(p.flags).str(p.name); }

struct OpenP {
  uint32_t flags = kOpenWritable;
  std::string name = "weights.bin";
};
Bytes build(const OpenP& p) { return Bytes().u32(p.flags).str(p.name); }

struct UnlinkP {
  std::string name = "weights.bin";
};
Bytes build(const UnlinkP& p) { return Bytes().str(p.name); }

struct EntryP {
  uint8_t kind = 1;
  uint32_t mode = 0644;
  std::string name = "kv";
};
struct RegionsP {
  std::vector<EntryP> regions = {EntryP{}, EntryP{.kind = 0, .mode = 0600, .name = ""}};
  int64_t count = -1;
};
Bytes build(const RegionsP& p) {
  Bytes b;
  b.u32(p.count < 0 ? static_cast<uint32_t>(p.regions.size()) : static_cast<uint32_t>(p.count));
  for (const EntryP& e : p.regions) {
    b.u64(1).u8(e.kind).u32(0).u64(4096).u32(1000).u32(e.mode).u64(2).u32(1).u64(4096).str(e.name);
  }
  return b;
}

struct ClientsP {
  std::string name = "worker";
};
Bytes build(const ClientsP& p) {
  return Bytes().u32(1).u64(1).u32(100).u32(1000).u32(1000).u32(2).u64(4096).u64(99).str(p.name);
}

struct StatsP {
  std::string name = "pool.regions";
  int64_t count = -1;
};
Bytes build(const StatsP& p) {
  return Bytes().u32(p.count < 0 ? 1 : static_cast<uint32_t>(p.count)).u64(5).str(p.name);
}

struct BackendsP {
  uint8_t state = 0;
  std::string detail = "memfd";
};
Bytes build(const BackendsP& p) { return Bytes().u32(1).u8(p.state).str("MemTier").str("emu").str(p.detail); }

Bytes migrate_reply() {
  Bytes b;
  b.u64(1).u32(0).u32(1);
  for (int i = 0; i < 7; ++i) b.u64(i);
  return b;
}

std::vector<std::byte> with_version(std::vector<std::byte> d, uint16_t version) {
  testing::patch_u16(d, 4, version);
  return d;
}

std::vector<std::byte> with_payload_length(std::vector<std::byte> d, uint32_t length) {
  testing::patch_u32(d, 12, length);
  return d;
}

std::vector<std::byte> chopped(std::vector<std::byte> d, size_t bytes) {
  d.erase(d.end() - static_cast<std::ptrdiff_t>(bytes), d.end());
  return with_payload_length(d, static_cast<uint32_t>(d.size() - kHeaderSize));
}

std::vector<std::byte> plus_byte(std::vector<std::byte> d) {
  d.push_back(std::byte{0});
  return with_payload_length(d, static_cast<uint32_t>(d.size() - kHeaderSize));
}

// ---- valid controls ----

TEST(ProtoDecodeBuilders, BuildersProduceValidMessages) {
  const std::vector<std::vector<std::byte>> valid = {
      datagram(MsgType::kHello, build(HelloP{})),
      datagram(MsgType::kHelloReply, build(HelloReplyP{})),
      datagram(MsgType::kError, build(ErrorP{})),
      datagram(MsgType::kStatusReply, build(StatusReplyP{})),
      datagram(MsgType::kTiersReply, build(TiersP{})),
      datagram(MsgType::kRegionAlloc, build(AllocP{})),
      datagram(MsgType::kRegionReply, build(RegionReplyP{})),
      datagram(MsgType::kNamedCreate, build(CreateP{})),
      datagram(MsgType::kNamedOpen, build(OpenP{})),
      datagram(MsgType::kNamedUnlink, build(UnlinkP{})),
      datagram(MsgType::kRegionsReply, build(RegionsP{})),
      datagram(MsgType::kClientsReply, build(ClientsP{})),
      datagram(MsgType::kStatsReply, build(StatsP{})),
      datagram(MsgType::kBackendsReply, build(BackendsP{})),
      datagram(MsgType::kMigrateReply, migrate_reply()),
      datagram(MsgType::kRegionMigrate, Bytes().u64(1).u32(2)),
      datagram(MsgType::kRegionFree, Bytes().u64(1)),
      datagram(MsgType::kOk, Bytes()),
      // Limits are inclusive.
      datagram(MsgType::kHello, build(HelloP{.min = 1, .max = 7, .name = std::string(64, '~')})),
      datagram(MsgType::kError, build(ErrorP{.code = 4095, .message = std::string(1024, 'm')})),
      datagram(MsgType::kNamedCreate, build(CreateP{.mode = 0777, .flags = kAllocKnownFlags,
                                                    .name = std::string(200, 'n')})),
      datagram(MsgType::kStatusReply, build(StatusReplyP{.state_dir = std::string(4096, 's')})),
      datagram(MsgType::kTiersReply, build(TiersP{.tiers = {TierP{.kind = 2}}})),
      datagram(MsgType::kBackendsReply, build(BackendsP{.state = 3})),
      datagram(MsgType::kStatsReply, Bytes().u32(0)),
  };
  for (size_t i = 0; i < valid.size(); ++i) {
    auto decoded = decode(valid[i]);
    EXPECT_TRUE(decoded) << "control " << i << ": " << decoded.error().message;
  }
}

// ---- rejections ----

struct RejectCase {
  std::string label;
  std::vector<std::byte> bytes;
  int code;
  std::string needle;  // must appear in the error message
};
void PrintTo(const RejectCase& c, std::ostream* os) { *os << c.label; }

std::vector<RejectCase> reject_cases() {
  const auto alloc = datagram(MsgType::kRegionAlloc, build(AllocP{}));
  std::vector<std::byte> big(kMaxMessageSize + 1, std::byte{0});
  std::copy(alloc.begin(), alloc.begin() + kHeaderSize, big.begin());
  std::vector<std::byte> bad_magic = alloc;
  testing::patch_u32(bad_magic, 0, 0x50584c43);
  std::vector<RejectCase> cases = {
      // Header.
      {"Empty", {}, EPROTO, "header"},
      {"HeaderTruncated", std::vector<std::byte>(alloc.begin(), alloc.begin() + 15), EPROTO, "header"},
      {"BadMagic", bad_magic, EPROTO, "header.magic"},
      {"TypeZero", datagram(static_cast<MsgType>(0), Bytes()), EPROTO, "header.type"},
      {"TypeFive", datagram(static_cast<MsgType>(5), Bytes()), EPROTO, "header.type"},
      {"TypeUnknown", datagram(static_cast<MsgType>(0xffff), Bytes()), EPROTO, "header.type"},
      {"VersionZero", with_version(alloc, 0), EPROTONOSUPPORT, "header.version"},
      {"VersionTooNew", with_version(alloc, kVersionMax + 1), EPROTONOSUPPORT, "header.version"},
      {"ReplyVersionTooNew", datagram(MsgType::kHelloReply, build(HelloReplyP{}), kVersionMax + 1),
       EPROTONOSUPPORT, "header.version"},
      {"HelloVersionZero", datagram(MsgType::kHello, build(HelloP{}), 0), EPROTONOSUPPORT,
       "header.version"},
      {"PayloadLengthLong", with_payload_length(alloc, 17), EPROTO, "header.payload_length"},
      {"PayloadLengthShort", with_payload_length(alloc, 15), EPROTO, "header.payload_length"},
      {"PayloadLengthHuge", with_payload_length(alloc, 0xffffffff), EMSGSIZE, "header.payload_length"},
      {"DatagramTooBig", big, EMSGSIZE, "65537"},
      // Trailing bytes.
      {"RegionAllocTrailing", plus_byte(alloc), EPROTO, "RegionAlloc: 1 trailing"},
      {"HelloTrailingAtCurrentVersion", plus_byte(datagram(MsgType::kHello, build(HelloP{}))), EPROTO,
       "Hello: 1 trailing"},
      {"RegionFreeTrailing", datagram(MsgType::kRegionFree, Bytes().u64(1).u8(0)), EPROTO,
       "RegionFree: 1 trailing"},
      // Hello.
      {"HelloMinVersionZero", datagram(MsgType::kHello, build(HelloP{.min = 0})), EPROTO,
       "Hello.min_version"},
      {"HelloMinAboveMax", datagram(MsgType::kHello, build(HelloP{.min = 3, .max = 2})), EPROTO,
       "Hello.min_version"},
      {"HelloClientNameTooLong", datagram(MsgType::kHello, build(HelloP{.name = std::string(65, 'a')})),
       EPROTO, "Hello.client_name"},
      {"HelloClientNameControl", datagram(MsgType::kHello, build(HelloP{.name = "a\tb"})), EPROTO,
       "Hello.client_name"},
      {"HelloClientNameDel", datagram(MsgType::kHello, build(HelloP{.name = "a\x7f"})), EPROTO,
       "Hello.client_name"},
      {"HelloClientNameUtf8", datagram(MsgType::kHello, build(HelloP{.name = "caf\xc3\xa9"})), EPROTO,
       "Hello.client_name"},
      {"HelloClientNameNul", datagram(MsgType::kHello, build(HelloP{.name = std::string("a\0", 2)})),
       EPROTO, "Hello.client_name"},
      {"HelloClientNamePastEnd", chopped(datagram(MsgType::kHello, build(HelloP{})), 1), EPROTO,
       "Hello.client_name"},
      {"HelloMaxVersionTruncated", datagram(MsgType::kHello, Bytes().u16(1).u8(1)), EPROTO,
       "Hello.max_version"},
      // HelloReply.
      {"HelloReplyVersionZero", datagram(MsgType::kHelloReply, build(HelloReplyP{.version = 0})), EPROTO,
       "HelloReply.version"},
      {"HelloReplyVersionTooNew",
       datagram(MsgType::kHelloReply, build(HelloReplyP{.version = kVersionMax + 1})), EPROTO,
       "HelloReply.version"},
      {"HelloReplyMaxMessageSizeTiny",
       datagram(MsgType::kHelloReply, build(HelloReplyP{.max_message_size = 15})), EPROTO,
       "HelloReply.max_message_size"},
      {"HelloReplyDaemonVersionTooLong",
       datagram(MsgType::kHelloReply, build(HelloReplyP{.daemon_version = std::string(4097, 'v')})),
       EPROTO, "HelloReply.daemon_version"},
      {"HelloReplyDaemonVersionNul",
       datagram(MsgType::kHelloReply, build(HelloReplyP{.daemon_version = std::string("1\0", 2)})),
       EPROTO, "HelloReply.daemon_version"},
      // ErrorReply.
      {"ErrorCodeZero", datagram(MsgType::kError, build(ErrorP{.code = 0})), EPROTO, "ErrorReply.code"},
      {"ErrorCodeNegative", datagram(MsgType::kError, build(ErrorP{.code = -EPERM})), EPROTO,
       "ErrorReply.code"},
      {"ErrorCodeTooLarge", datagram(MsgType::kError, build(ErrorP{.code = 4096})), EPROTO,
       "ErrorReply.code"},
      {"ErrorMessageTooLong", datagram(MsgType::kError, build(ErrorP{.message = std::string(1025, 'e')})),
       EPROTO, "ErrorReply.message"},
      // StatusReply.
      {"StatusStateDirTooLong",
       datagram(MsgType::kStatusReply, build(StatusReplyP{.state_dir = std::string(4097, 's')})), EPROTO,
       "StatusReply.state_dir"},
      {"StatusConfigSourceNul",
       datagram(MsgType::kStatusReply, build(StatusReplyP{.config_source = std::string("a\0b", 3)})),
       EPROTO, "StatusReply.config_source"},
      {"StatusConfigSourceTruncated", chopped(datagram(MsgType::kStatusReply, build(StatusReplyP{})), 3),
       EPROTO, "StatusReply.config_source"},
      // TiersReply.
      {"TiersCountOverLimit", datagram(MsgType::kTiersReply, build(TiersP{.count = 1025})), EPROTO,
       "TiersReply.tiers"},
      {"TiersCountBeyondBytes", datagram(MsgType::kTiersReply, build(TiersP{.count = 3})), EPROTO,
       "TiersReply.tiers"},
      {"TiersCountHuge", datagram(MsgType::kTiersReply, build(TiersP{.count = 0xffffffff})), EPROTO,
       "TiersReply.tiers"},
      {"TiersCountBelowEntries", datagram(MsgType::kTiersReply, build(TiersP{.count = 1})), EPROTO,
       "trailing"},
      {"TierKindUnknown", datagram(MsgType::kTiersReply, build(TiersP{.tiers = {TierP{.kind = 3}}})),
       EPROTO, "TiersReply.tiers[0].kind"},
      {"SecondTierKindUnknown",
       datagram(MsgType::kTiersReply, build(TiersP{.tiers = {TierP{}, TierP{.kind = 200}}})), EPROTO,
       "TiersReply.tiers[1].kind"},
      {"TierNumaNodeBelowMinusOne",
       datagram(MsgType::kTiersReply, build(TiersP{.tiers = {TierP{.numa_node = -2}}})), EPROTO,
       "TiersReply.tiers[0].numa_node"},
      {"TierNameTooLong",
       datagram(MsgType::kTiersReply, build(TiersP{.tiers = {TierP{.name = std::string(4097, 't')}}})),
       EPROTO, "TiersReply.tiers[0].name"},
      {"TierTruncated", chopped(datagram(MsgType::kTiersReply, build(TiersP{})), 5), EPROTO,
       "TiersReply.tiers[1].name"},
      // RegionAlloc.
      {"AllocSizeZero", datagram(MsgType::kRegionAlloc, build(AllocP{.size = 0})), EPROTO,
       "RegionAlloc.size"},
      {"AllocFlagsUnknown", datagram(MsgType::kRegionAlloc, build(AllocP{.flags = 0x8})), EPROTO,
       "RegionAlloc.flags: unknown bits 0x8"},
      {"AllocFlagsHighBit", datagram(MsgType::kRegionAlloc, build(AllocP{.flags = 0x80000001})), EPROTO,
       "RegionAlloc.flags: unknown bits 0x80000000"},
      {"AllocTruncated", chopped(alloc, 1), EPROTO, "RegionAlloc.flags"},
      // RegionReply.
      {"RegionReplyFlagsUnknown", datagram(MsgType::kRegionReply, build(RegionReplyP{.flags = 0x4})),
       EPROTO, "RegionReply.flags: unknown bits 0x4"},
      {"RegionReplyNameInvalid", datagram(MsgType::kRegionReply, build(RegionReplyP{.name = "../etc"})),
       EPROTO, "RegionReply.name"},
      // NamedCreate.
      {"CreateNameEmpty", datagram(MsgType::kNamedCreate, build(CreateP{.name = ""})), EPROTO,
       "NamedCreate.name"},
      {"CreateNameSlash", datagram(MsgType::kNamedCreate, build(CreateP{.name = "a/b"})), EPROTO,
       "NamedCreate.name"},
      {"CreateNameLeadingDot", datagram(MsgType::kNamedCreate, build(CreateP{.name = ".x"})), EPROTO,
       "NamedCreate.name"},
      {"CreateNameDotDot", datagram(MsgType::kNamedCreate, build(CreateP{.name = ".."})), EPROTO,
       "NamedCreate.name"},
      {"CreateNameTooLong", datagram(MsgType::kNamedCreate, build(CreateP{.name = std::string(201, 'n')})),
       EPROTO, "NamedCreate.name"},
      {"CreateNameNonAscii", datagram(MsgType::kNamedCreate, build(CreateP{.name = "w\xff"})), EPROTO,
       "NamedCreate.name"},
      {"CreateSizeZero", datagram(MsgType::kNamedCreate, build(CreateP{.size = 0})), EPROTO,
       "NamedCreate.size"},
      {"CreateModeSetuid", datagram(MsgType::kNamedCreate, build(CreateP{.mode = 04755})), EPROTO,
       "NamedCreate.mode: bits 04000"},
      {"CreateModeSticky", datagram(MsgType::kNamedCreate, build(CreateP{.mode = 01777})), EPROTO,
       "NamedCreate.mode"},
      {"CreateFlagsUnknown", datagram(MsgType::kNamedCreate, build(CreateP{.flags = 0x10})), EPROTO,
       "NamedCreate.flags: unknown bits 0x10"},
      // NamedOpen / NamedUnlink.
      {"OpenFlagsUnknown", datagram(MsgType::kNamedOpen, build(OpenP{.flags = 0x3})), EPROTO,
       "NamedOpen.flags: unknown bits 0x2"},
      {"OpenNameInvalid", datagram(MsgType::kNamedOpen, build(OpenP{.name = "a b"})), EPROTO,
       "NamedOpen.name"},
      {"UnlinkNameEmpty", datagram(MsgType::kNamedUnlink, build(UnlinkP{.name = ""})), EPROTO,
       "NamedUnlink.name"},
      {"UnlinkNameLeadingDot", datagram(MsgType::kNamedUnlink, build(UnlinkP{.name = ".git"})), EPROTO,
       "NamedUnlink.name"},
      {"UnlinkNamePastEnd", chopped(datagram(MsgType::kNamedUnlink, build(UnlinkP{})), 2), EPROTO,
       "NamedUnlink.name"},
      // RegionsReply.
      {"RegionKindUnknown", datagram(MsgType::kRegionsReply, build(RegionsP{.regions = {{.kind = 2}}})),
       EPROTO, "RegionsReply.regions[0].kind"},
      {"RegionModeOutOfMask",
       datagram(MsgType::kRegionsReply, build(RegionsP{.regions = {{.mode = 02640}}})), EPROTO,
       "RegionsReply.regions[0].mode"},
      {"NamedRegionWithoutName",
       datagram(MsgType::kRegionsReply, build(RegionsP{.regions = {{.kind = 1, .name = ""}}})), EPROTO,
       "RegionsReply.regions[0].name"},
      {"LeasedRegionWithName",
       datagram(MsgType::kRegionsReply, build(RegionsP{.regions = {EntryP{}, {.kind = 0, .name = "x"}}})),
       EPROTO, "RegionsReply.regions[1].name"},
      {"NamedRegionInvalidName",
       datagram(MsgType::kRegionsReply, build(RegionsP{.regions = {{.kind = 1, .name = "x/y"}}})), EPROTO,
       "RegionsReply.regions[0].name"},
      {"RegionsCountBeyondBytes", datagram(MsgType::kRegionsReply, build(RegionsP{.count = 40})), EPROTO,
       "RegionsReply.regions"},
      // Fixed-size messages cut short.
      {"RegionMigrateTruncated", datagram(MsgType::kRegionMigrate, Bytes().u64(1).u16(2)), EPROTO,
       "RegionMigrate.target_tier"},
      {"RegionFreeTruncated", datagram(MsgType::kRegionFree, Bytes().u32(1)), EPROTO,
       "RegionFree.region_id"},
      {"MigrateReplyTruncated", chopped(datagram(MsgType::kMigrateReply, migrate_reply()), 1), EPROTO,
       "MigrateReply.elapsed_ns"},
      // ClientsReply.
      {"ClientNameNonPrintable", datagram(MsgType::kClientsReply, build(ClientsP{.name = "w\x1b[2J"})),
       EPROTO, "ClientsReply.clients[0].name"},
      {"ClientNameTooLong", datagram(MsgType::kClientsReply, build(ClientsP{.name = std::string(65, 'c')})),
       EPROTO, "ClientsReply.clients[0].name"},
      // StatsReply.
      {"StatsCountOverLimit", datagram(MsgType::kStatsReply, build(StatsP{.count = 1025})), EPROTO,
       "StatsReply.counters"},
      {"StatsCountBeyondBytes", datagram(MsgType::kStatsReply, build(StatsP{.count = 2})), EPROTO,
       "StatsReply.counters"},
      {"StatsNameTooLong", datagram(MsgType::kStatsReply, build(StatsP{.name = std::string(4097, 'c')})),
       EPROTO, "StatsReply.counters[0].name"},
      // BackendsReply.
      {"BackendStateUnknown", datagram(MsgType::kBackendsReply, build(BackendsP{.state = 4})), EPROTO,
       "BackendsReply.backends[0].state"},
      {"BackendDetailTooLong",
       datagram(MsgType::kBackendsReply, build(BackendsP{.detail = std::string(4097, 'd')})), EPROTO,
       "BackendsReply.backends[0].detail"},
      // Tiering.
      {"RingOpenTruncated", datagram(MsgType::kAccessRingOpen, Bytes().u16(1)), EPROTO,
       "AccessRingOpen.entries: truncated"},
      {"RingOpenOdd", datagram(MsgType::kAccessRingOpen, Bytes().u32(6)), EPROTO,
       "AccessRingOpen.entries: 6 is not a power of two"},
      {"HotTopTrailing", datagram(MsgType::kTieringHot, Bytes().u32(5).u8(0)), EPROTO, "trailing bytes"},
      {"HotReplyCountTooLarge", datagram(MsgType::kTieringHotReply, Bytes().u64(1).u32(1025)), EPROTO,
       "TieringHotReply.pages: 1025 entries exceed"},
      {"SetValueNul", datagram(MsgType::kTieringSet, Bytes().str("k").str(std::string("a\0b", 3))), EPROTO,
       "TieringSet.value"},
  };
  // Types without a payload must have payload_length 0.
  for (MsgType type : {MsgType::kOk, MsgType::kStatus, MsgType::kTiers, MsgType::kRegions,
                       MsgType::kClients, MsgType::kStats, MsgType::kBackends, MsgType::kTieringStatus}) {
    cases.push_back({std::string(message_type_name(type)) + "WithPayload",
                     datagram(type, Bytes().u8(0)), EPROTO, "header.payload_length"});
  }
  return cases;
}

class ProtoDecodeReject : public ::testing::TestWithParam<RejectCase> {};

TEST_P(ProtoDecodeReject, FailsWithTheFieldNamed) {
  const RejectCase& c = GetParam();
  std::string error;
  testing::expect_decode_refused(c.bytes, c.code, c.needle, &error);
  RecordProperty("error", error);
}

INSTANTIATE_TEST_SUITE_P(Fields, ProtoDecodeReject, ::testing::ValuesIn(reject_cases()), testing::CaseLabel());

// ---- the encoder refuses the same values ----

struct EncodeCase {
  std::string label;
  Message message;
  std::string needle;
};
void PrintTo(const EncodeCase& c, std::ostream* os) { *os << c.label; }

std::vector<EncodeCase> encode_cases() {
  return {
      {"HelloMinAboveMax", Hello{.min_version = 2, .max_version = 1}, "Hello.min_version"},
      {"HelloMinZero", Hello{.min_version = 0}, "Hello.min_version"},
      {"HelloNameTooLong", Hello{.client_name = std::string(65, 'a')}, "Hello.client_name"},
      {"HelloNameNewline", Hello{.client_name = "a\n"}, "Hello.client_name"},
      {"HelloReplyVersion", HelloReply{.version = 0}, "HelloReply.version"},
      {"ErrorCodeZero", ErrorReply{.code = 0, .message = "x"}, "ErrorReply.code"},
      {"ErrorMessageTooLong", ErrorReply{.code = 1, .message = std::string(1025, 'x')},
       "ErrorReply.message"},
      {"StatusStringTooLong", StatusReply{.config_source = std::string(4097, 'x')},
       "StatusReply.config_source"},
      {"StatusStringHuge", StatusReply{.state_dir = std::string(70000, 'x')}, "StatusReply.state_dir"},
      {"TierKind", TiersReply{.tiers = {TierInfo{.kind = static_cast<TierKind>(3)}}},
       "TiersReply.tiers[0].kind"},
      {"TierNumaNode", TiersReply{.tiers = {TierInfo{.numa_node = -5}}}, "TiersReply.tiers[0].numa_node"},
      {"AllocSizeZero", RegionAlloc{.size = 0}, "RegionAlloc.size"},
      {"AllocFlags", RegionAlloc{.size = 1, .flags = 0x8}, "RegionAlloc.flags: unknown bits 0x8"},
      {"RegionReplyFlags", RegionReply{.flags = 0x100}, "RegionReply.flags"},
      {"RegionReplyName", RegionReply{.name = ".x"}, "RegionReply.name"},
      {"CreateName", NamedCreate{.name = "a/b", .size = 1}, "NamedCreate.name"},
      {"CreateSize", NamedCreate{.name = "a", .size = 0}, "NamedCreate.size"},
      {"CreateMode", NamedCreate{.name = "a", .size = 1, .mode = 01000}, "NamedCreate.mode"},
      {"CreateFlags", NamedCreate{.name = "a", .size = 1, .flags = 4}, "NamedCreate.flags"},
      {"OpenFlags", NamedOpen{.name = "a", .flags = 2}, "NamedOpen.flags"},
      {"OpenName", NamedOpen{.name = ""}, "NamedOpen.name"},
      {"UnlinkName", NamedUnlink{.name = std::string(201, 'a')}, "NamedUnlink.name"},
      {"RegionEntryKind", RegionsReply{.regions = {RegionEntry{.kind = static_cast<RegionKind>(9)}}},
       "RegionsReply.regions[0].kind"},
      {"RegionEntryLeasedName", RegionsReply{.regions = {RegionEntry{.name = "a"}}},
       "RegionsReply.regions[0].name"},
      {"ClientName", ClientsReply{.clients = {ClientEntry{}, ClientEntry{.name = "\x01"}}},
       "ClientsReply.clients[1].name"},
      {"CounterName", StatsReply{.counters = {Counter{.name = std::string("\0", 1)}}},
       "StatsReply.counters[0].name"},
      {"BackendState", BackendsReply{.backends = {BackendEntry{.state = static_cast<BackendState>(4)}}},
       "BackendsReply.backends[0].state"},
      {"RingOpenNotPowerOfTwo", AccessRingOpen{.entries = 3}, "AccessRingOpen.entries: 3 is not a power of two"},
      {"RingOpenTooLarge", AccessRingOpen{.entries = kMaxAccessRingEntries * 2}, "AccessRingOpen.entries"},
      {"RingReplyZero", AccessRingReply{.entries = 0, .entry_size = 32, .ring_bytes = 1},
       "AccessRingReply.entries"},
      {"RingReplyEntrySize", AccessRingReply{.entries = 1, .entry_size = 0, .ring_bytes = 1},
       "AccessRingReply.entry_size"},
      {"RingReplyBytes", AccessRingReply{.entries = 1, .entry_size = 32, .ring_bytes = 0},
       "AccessRingReply.ring_bytes"},
      {"StatusEnabled", TieringStatusReply{.enabled = 2}, "TieringStatusReply.enabled"},
      {"StatusNominator", TieringStatusReply{.nominator = static_cast<Nominator>(2)},
       "TieringStatusReply.nominator"},
      {"StatusTierRole", TieringStatusReply{.tiers = {TieringTierEntry{.role = static_cast<TierRole>(3)}}},
       "TieringStatusReply.tiers[0].role"},
      {"StatusSourceState",
       TieringStatusReply{.sources = {TieringSourceEntry{.state = static_cast<BackendState>(4)}}},
       "TieringStatusReply.sources[0].state"},
      {"StatusKnobEmptyKey", TieringStatusReply{.knobs = {KnobEntry{.key = "", .value = "1"}}},
       "TieringStatusReply.knobs[0].key: empty"},
      {"HotTopZero", TieringHot{.top = 0}, "TieringHot.top"},
      {"HotTopTooLarge", TieringHot{.top = 1025}, "TieringHot.top"},
      {"HotSpace", TieringHotReply{.pages = {HotPageEntry{.space = static_cast<AccessSpace>(4)}}},
       "TieringHotReply.pages[0].space"},
      {"HotClass", TieringHotReply{.pages = {HotPageEntry{.page_class = static_cast<PageClass>(3)}}},
       "TieringHotReply.pages[0].page_class"},
      {"HotWords", TieringHotReply{.pages = {HotPageEntry{.touched_words = 65}}},
       "TieringHotReply.pages[0].touched_words"},
      {"HotUnalignedAddress", TieringHotReply{.pages = {HotPageEntry{.address = 4097}}},
       "TieringHotReply.pages[0].address"},
      {"SetEmptyKey", TieringSet{.key = "", .value = "1"}, "TieringSet.key: empty"},
      {"SetEmptyValue", TieringSet{.key = "k", .value = ""}, "TieringSet.value: empty"},
      {"SetKeyTooLong", TieringSet{.key = std::string(257, 'k'), .value = "1"}, "TieringSet.key"},
      {"SetValueControl", TieringSet{.key = "k", .value = "a\tb"}, "TieringSet.value"},
      {"SetReplyNewEmpty", TieringSetReply{.key = "k", .old_value = "", .new_value = ""},
       "TieringSetReply.new_value"},
  };
}

class ProtoEncodeReject : public ::testing::TestWithParam<EncodeCase> {};

TEST_P(ProtoEncodeReject, FailsWithEinvalAndTheFieldNamed) {
  testing::expect_encode_refused(GetParam().message, GetParam().needle);
}

INSTANTIATE_TEST_SUITE_P(Fields, ProtoEncodeReject, ::testing::ValuesIn(encode_cases()), testing::CaseLabel());

}  // namespace
}  // namespace cxlpool::proto
