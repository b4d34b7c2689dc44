// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
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

template <typename T>
constexpr TypeInfo type_info(std::type_identity<T>) {
  return {MessageTraits<T>::kType, MessageTraits<T>::kName, RequestMessage<T>};
}

template <size_t... I>
constexpr auto make_types(std::index_sequence<I...>) {
  return std::array<TypeInfo, sizeof...(I)>{type_info(std::type_identity<std::variant_alternative_t<I, Message>>{})...};
}

// In the order of the Message variant's alternatives.
constexpr auto kTypes = make_types(std::make_index_sequence<std::variant_size_v<Message>>());

constexpr uint16_t highest_code() {
  uint16_t highest = 0;
  for (const TypeInfo& info : kTypes) highest = std::max(highest, static_cast<uint16_t>(info.type));
  return highest;
}

constexpr int kUnknownType = -1;

// kTypes' index by wire code, kUnknownType for codes no message has.
constexpr auto kIndexByCode = [] {
  std::array<int, highest_code() + 1> index{};
  index.fill(kUnknownType);
  for (size_t i = 0; i < kTypes.size(); ++i) index[static_cast<uint16_t>(kTypes[i].type)] = static_cast<int>(i);
  return index;
}();

// What a wrong row in message_table.hpp would break.
constexpr bool codes_are_unique() {
  size_t known = 0;
  for (const int index : kIndexByCode) known += index != kUnknownType;
  return known == kTypes.size();
}
static_assert(codes_are_unique(), "two messages share a type code");
static_assert(kIndexByCode[0] == kUnknownType, "type code 0 is never a message");

template <typename T>
constexpr bool answered_by_a_reply(std::type_identity<T>) {
  if constexpr (RequestMessage<T>) {
    return MessageTraits<ReplyTo<T>>::kKind == MessageKind::kReply;
  } else {
    return std::is_void_v<typename MessageTraits<T>::Answer>;
  }
}
static_assert([] {
  bool ok = true;
  for_each_message_type([&](auto type) { ok = ok && answered_by_a_reply(type); });
  return ok;
}(), "a request's answer must be a reply, and a reply has none");

int type_index(uint16_t type) { return type < kIndexByCode.size() ? kIndexByCode[type] : kUnknownType; }

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
