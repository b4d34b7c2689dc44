// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <cerrno>
#include <string>
#include <type_traits>
#include <utility>

#include "cxlpool/proto/messages.hpp"
#include "field_io.hpp"
#include "wire.hpp"

namespace cxlpool::proto {

namespace {

struct TypeInfo {
  MsgType type;
  const char* name;
  bool request;
};

// In the order of the Message variant's alternatives.
constexpr std::array<TypeInfo, 51> kTypes = {{
    {MsgType::kHello, "Hello", true},
    {MsgType::kHelloReply, "HelloReply", false},
    {MsgType::kError, "ErrorReply", false},
    {MsgType::kOk, "Ok", false},
    {MsgType::kStatus, "StatusRequest", true},
    {MsgType::kStatusReply, "StatusReply", false},
    {MsgType::kTiers, "TiersRequest", true},
    {MsgType::kTiersReply, "TiersReply", false},
    {MsgType::kRegionAlloc, "RegionAlloc", true},
    {MsgType::kRegionReply, "RegionReply", false},
    {MsgType::kRegionFree, "RegionFree", true},
    {MsgType::kNamedCreate, "NamedCreate", true},
    {MsgType::kNamedOpen, "NamedOpen", true},
    {MsgType::kNamedUnlink, "NamedUnlink", true},
    {MsgType::kRegions, "RegionsRequest", true},
    {MsgType::kRegionsReply, "RegionsReply", false},
    {MsgType::kRegionMigrate, "RegionMigrate", true},
    {MsgType::kMigrateReply, "MigrateReply", false},
    {MsgType::kClients, "ClientsRequest", true},
    {MsgType::kClientsReply, "ClientsReply", false},
    {MsgType::kStats, "StatsRequest", true},
    {MsgType::kStatsReply, "StatsReply", false},
    {MsgType::kBackends, "BackendsRequest", true},
    {MsgType::kBackendsReply, "BackendsReply", false},
    {MsgType::kAccessRingOpen, "AccessRingOpen", true},
    {MsgType::kAccessRingReply, "AccessRingReply", false},
    {MsgType::kTieringStatus, "TieringStatusRequest", true},
    {MsgType::kTieringStatusReply, "TieringStatusReply", false},
    {MsgType::kTieringHot, "TieringHot", true},
    {MsgType::kTieringHotReply, "TieringHotReply", false},
    {MsgType::kTieringSet, "TieringSet", true},
    {MsgType::kTieringSetReply, "TieringSetReply", false},
    {MsgType::kKvOpen, "KvOpen", true},
    {MsgType::kKvOpenReply, "KvOpenReply", false},
    {MsgType::kKvNamespaceOpen, "KvNamespaceOpen", true},
    {MsgType::kKvNamespaceReply, "KvNamespaceReply", false},
    {MsgType::kKvStatus, "KvStatusRequest", true},
    {MsgType::kKvStatusReply, "KvStatusReply", false},
    {MsgType::kKvNamespaces, "KvNamespacesRequest", true},
    {MsgType::kKvNamespacesReply, "KvNamespacesReply", false},
    {MsgType::kKvNamespaceDrop, "KvNamespaceDrop", true},
    {MsgType::kKvNamespaceDropReply, "KvNamespaceDropReply", false},
    {MsgType::kWeightsLoad, "WeightsLoad", true},
    {MsgType::kWeightsLoadReply, "WeightsLoadReply", false},
    {MsgType::kWeightsOpen, "WeightsOpen", true},
    {MsgType::kWeightsUnload, "WeightsUnload", true},
    {MsgType::kWeightsUnloadReply, "WeightsUnloadReply", false},
    {MsgType::kWeightsList, "WeightsListRequest", true},
    {MsgType::kWeightsListReply, "WeightsListReply", false},
    {MsgType::kGpuHostAlloc, "GpuHostAlloc", true},
    {MsgType::kGpuHostAllocReply, "GpuHostAllocReply", false},
}};
static_assert(kTypes.size() == std::variant_size_v<Message>);

constexpr int kUnknownType = -1;

int type_index(uint16_t type) {
  for (size_t i = 0; i < kTypes.size(); ++i) {
    if (static_cast<uint16_t>(kTypes[i].type) == type) return static_cast<int>(i);
  }
  return kUnknownType;
}

template <size_t I>
Message make_alternative() {
  return Message(std::in_place_index<I>);
}

template <size_t... I>
constexpr auto make_factories(std::index_sequence<I...>) {
  return std::array<Message (*)(), sizeof...(I)>{&make_alternative<I>...};
}

constexpr auto kFactories = make_factories(std::make_index_sequence<std::variant_size_v<Message>>());

bool version_supported(uint16_t version) { return version >= kVersionMin && version <= kVersionMax; }

// Hello is negotiated before a version is agreed, so any version >= 1 parses.
bool version_acceptable(MsgType type, uint16_t version) {
  return type == MsgType::kHello ? version >= 1 : version_supported(version);
}

std::string supported_range() {
  return std::to_string(kVersionMin) + ".." + std::to_string(kVersionMax);
}

std::string hex32(uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out += kDigits[(v >> shift) & 0xf];
  return out;
}

}  // namespace

MsgType message_type(const Message& message) { return kTypes[message.index()].type; }

const char* message_type_name(MsgType type) {
  const int index = type_index(static_cast<uint16_t>(type));
  return index == kUnknownType ? "unknown" : kTypes[index].name;
}

bool is_request(MsgType type) {
  const int index = type_index(static_cast<uint16_t>(type));
  return index != kUnknownType && kTypes[index].request;
}

bool valid_region_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || name.front() == '.') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<std::vector<std::byte>> encode(uint32_t request_id, const Message& message, uint16_t version) {
  const TypeInfo& info = kTypes[message.index()];
  if (!version_acceptable(info.type, version)) {
    return fail(EINVAL, std::string(info.name) + ": version " + std::to_string(version) +
                            " is not supported (" + supported_range() + ")");
  }

  fields::FieldValidator validator(info.name);
  std::visit([&](const auto& m) { fields::walk(validator, m); }, message);
  if (validator.failed()) return fail(EINVAL, validator.error());

  fields::SizeCounter counter;
  std::visit([&](const auto& m) { fields::walk(counter, m); }, message);
  const size_t total = kHeaderSize + counter.size();
  if (total > kMaxMessageSize) {
    return fail(EMSGSIZE, std::string(info.name) + ": " + std::to_string(total) +
                              " bytes exceed the message limit of " + std::to_string(kMaxMessageSize));
  }

  std::vector<std::byte> out;
  out.reserve(total);
  wire::Writer writer(out);
  writer.u32(kMagic);
  writer.u16(version);
  writer.u16(static_cast<uint16_t>(info.type));
  writer.u32(request_id);
  writer.u32(static_cast<uint32_t>(counter.size()));
  fields::FieldWriter field_writer(writer);
  std::visit([&](const auto& m) { fields::walk(field_writer, m); }, message);
  return out;
}

Result<Envelope> decode(std::span<const std::byte> datagram) {
  if (datagram.size() > kMaxMessageSize) {
    return fail(EMSGSIZE, "message of " + std::to_string(datagram.size()) +
                              " bytes exceeds the limit of " + std::to_string(kMaxMessageSize));
  }
  if (datagram.size() < kHeaderSize) {
    return fail(EPROTO, "header: truncated, " + std::to_string(datagram.size()) + " of " +
                            std::to_string(kHeaderSize) + " bytes");
  }

  wire::Reader reader(datagram);
  Header header;
  reader.u32(header.magic);
  reader.u16(header.version);
  reader.u16(header.type);
  reader.u32(header.request_id);
  reader.u32(header.payload_length);

  if (header.magic != kMagic) {
    return fail(EPROTO, "header.magic: " + hex32(header.magic) + " is not " + hex32(kMagic));
  }
  const int index = type_index(header.type);
  if (index == kUnknownType) {
    return fail(EPROTO, "header.type: unknown message type " + std::to_string(header.type));
  }
  const TypeInfo& info = kTypes[index];
  if (!version_acceptable(info.type, header.version)) {
    return fail(EPROTONOSUPPORT, "header.version: " + std::string(info.name) + " at version " +
                                     std::to_string(header.version) + " is not supported (" +
                                     supported_range() + ")");
  }
  if (header.payload_length > kMaxMessageSize - kHeaderSize) {
    return fail(EMSGSIZE, "header.payload_length: " + std::to_string(header.payload_length) +
                              " bytes exceed the message limit of " + std::to_string(kMaxMessageSize));
  }
  if (header.payload_length != reader.remaining()) {
    return fail(EPROTO, "header.payload_length: " + std::to_string(header.payload_length) +
                            " but " + std::to_string(reader.remaining()) + " payload bytes present");
  }

  Message message = kFactories[index]();
  const bool no_payload = std::visit([](const auto& m) { return fields::Empty<std::decay_t<decltype(m)>>; },
                                     message);
  if (no_payload && header.payload_length != 0) {
    return fail(EPROTO, "header.payload_length: " + std::string(info.name) + " has no payload but " +
                            std::to_string(header.payload_length) + " bytes follow");
  }
  fields::FieldReader field_reader(reader, info.name);
  std::visit([&](auto& m) { fields::walk(field_reader, m); }, message);
  if (field_reader.failed()) return fail(EPROTO, field_reader.error());

  // A later version may append fields to Hello; this build knows only the first ones.
  const bool may_extend = info.type == MsgType::kHello && header.version > kVersionMax;
  if (reader.remaining() != 0 && !may_extend) {
    return fail(EPROTO, std::string(info.name) + ": " + std::to_string(reader.remaining()) +
                            " trailing bytes after the last field (header.payload_length " +
                            std::to_string(header.payload_length) + ")");
  }

  fields::FieldValidator validator(info.name);
  std::visit([&](const auto& m) { fields::walk(validator, m); }, message);
  if (validator.failed()) return fail(EPROTO, validator.error());

  return Envelope{header, std::move(message)};
}

}  // namespace cxlpool::proto
