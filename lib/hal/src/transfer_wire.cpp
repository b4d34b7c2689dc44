// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/driver/transfer_wire.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace cxlpool::hal {
namespace {

constexpr std::string_view kCardMagic = "cxlpool-fabric/1";
constexpr std::uint32_t kWireMagic = 0x46545843;  // "CXTF" little-endian
constexpr std::uint16_t kWireVersion = 1;
// magic, version, type, id, entry count, reply address length
constexpr std::size_t kHeaderBytes = 4 + 2 + 2 + 8 + 4 + 4;
constexpr std::size_t kEntryBytes = 8 + 8 + 4 + 4 + 4;

const char kHex[] = "0123456789abcdef";

std::string hex_bytes(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    out += kHex[static_cast<unsigned>(b) >> 4];
    out += kHex[static_cast<unsigned>(b) & 15];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_hex_bytes(std::string_view text, std::vector<std::byte>* out) {
  if (text.size() % 2 != 0) return false;
  out->clear();
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<std::byte>(hi * 16 + lo));
  }
  return true;
}

bool parse_hex_u64(std::string_view text, std::uint64_t* out) {
  if (text.empty() || text.size() > 16) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string hex_u64(std::uint64_t v) {
  char buf[17];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, 16);
  return std::string(buf, end);
}

bool valid_token(std::string_view s, std::size_t max, bool semicolon) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || (semicolon && c == ';');
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

void put(std::vector<std::byte>* out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out->insert(out->end(), b, b + n);
}

template <typename T>
T take(std::span<const std::byte> bytes, std::size_t* at) {
  T v;
  std::memcpy(&v, bytes.data() + *at, sizeof(T));
  *at += sizeof(T);
  return v;
}

}  // namespace

std::string encode_peer_card(const PeerCard& card) {
  std::string out(kCardMagic);
  out += " id=" + hex_u64(card.instance) + " host=" + card.host_id;
  for (const CardRail& rail : card.rails) out += " rail=" + rail.provider + "," + hex_bytes(rail.address);
  for (const CardRegion& region : card.regions) {
    out += " region=" + hex_u64(region.key) + "," + hex_u64(region.base) + "," + hex_u64(region.length);
  }
  for (const CardRailKey& k : card.rail_keys) {
    out += " rkey=" + hex_u64(k.region) + "," + hex_u64(k.rail) + "," + hex_u64(k.key);
  }
  return out;
}

Result<PeerCard> decode_peer_card(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  const std::vector<std::string_view> tokens = split(text, ' ');
  if (tokens.empty() || tokens[0] != kCardMagic) {
    return fail(EINVAL, "peer card: does not start with " + std::string(kCardMagic));
  }
  PeerCard card;
  bool have_id = false, have_host = false;
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    const std::string_view t = tokens[i];
    const std::size_t eq = t.find('=');
    const std::string_view name = t.substr(0, eq), value = eq == std::string_view::npos ? "" : t.substr(eq + 1);
    const std::string bad = "peer card: bad " + std::string(name.substr(0, 16)) + " field";
    if (eq == std::string_view::npos) return fail(EINVAL, "peer card: token " + std::to_string(i) + " is not name=value");
    if (name == "id") {
      if (have_id || !parse_hex_u64(value, &card.instance)) return fail(EINVAL, bad);
      have_id = true;
    } else if (name == "host") {
      if (have_host || !valid_token(value, 64, false)) return fail(EINVAL, bad);
      card.host_id = value;
      have_host = true;
    } else if (name == "rail") {
      const auto parts = split(value, ',');
      CardRail rail;
      if (parts.size() != 2 || !valid_token(parts[0], 32, true) || !parse_hex_bytes(parts[1], &rail.address) ||
          rail.address.empty() || rail.address.size() > kMaxAddressBytes) {
        return fail(EINVAL, bad);
      }
      if (card.rails.size() == kMaxCardRails) return fail(EINVAL, "peer card: more than 16 rails");
      rail.provider = parts[0];
      card.rails.push_back(std::move(rail));
    } else if (name == "region") {
      const auto parts = split(value, ',');
      CardRegion region;
      if (parts.size() != 3 || !parse_hex_u64(parts[0], &region.key) || !parse_hex_u64(parts[1], &region.base) ||
          !parse_hex_u64(parts[2], &region.length) || region.length == 0 ||
          region.base + region.length < region.base) {
        return fail(EINVAL, bad);
      }
      if (card.regions.size() == kMaxCardRegions) return fail(EINVAL, "peer card: too many regions");
      for (const CardRegion& r : card.regions) {
        if (r.key == region.key) return fail(EINVAL, "peer card: region key " + hex_u64(r.key) + " twice");
      }
      card.regions.push_back(region);
    } else if (name == "rkey") {
      const auto parts = split(value, ',');
      CardRailKey k;
      std::uint64_t rail = 0;
      if (parts.size() != 3 || !parse_hex_u64(parts[0], &k.region) || !parse_hex_u64(parts[1], &rail) ||
          rail >= kMaxCardRails || !parse_hex_u64(parts[2], &k.key)) {
        return fail(EINVAL, bad);
      }
      if (card.rail_keys.size() == kMaxCardRegions * kMaxCardRails) return fail(EINVAL, "peer card: too many rkeys");
      k.rail = static_cast<std::uint32_t>(rail);
      card.rail_keys.push_back(k);
    } else {
      return fail(EINVAL, "peer card: unknown field " + std::string(name.substr(0, 16)));
    }
  }
  if (!have_id || !have_host) return fail(EINVAL, "peer card: id and host are required");
  if (card.rails.empty()) return fail(EINVAL, "peer card: no rail");
  // Checked once every rail and region is known: they may come in any order.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> seen;
  for (const CardRailKey& k : card.rail_keys) {
    if (k.rail >= card.rails.size()) return fail(EINVAL, "peer card: rkey for rail " + hex_u64(k.rail) + ", which it lacks");
    const bool known = std::any_of(card.regions.begin(), card.regions.end(),
                                   [&](const CardRegion& r) { return r.key == k.region; });
    if (!known) return fail(EINVAL, "peer card: rkey for region " + hex_u64(k.region) + ", which it lacks");
    seen.emplace_back(k.region, k.rail);
  }
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) return fail(EINVAL, "peer card: an rkey twice");
  return card;
}

std::size_t max_wire_bytes() { return kHeaderBytes + kMaxAddressBytes + kMaxWireEntries * kEntryBytes; }

std::vector<std::byte> encode_message(const WireMessage& m) {
  std::vector<std::byte> out;
  out.reserve(kHeaderBytes + m.reply_to.size() + m.entries.size() * kEntryBytes);
  const auto type = static_cast<std::uint16_t>(m.type);
  const auto count = static_cast<std::uint32_t>(m.entries.size());
  const auto reply_len = static_cast<std::uint32_t>(m.reply_to.size());
  put(&out, &kWireMagic, 4);
  put(&out, &kWireVersion, 2);
  put(&out, &type, 2);
  put(&out, &m.id, 8);
  put(&out, &count, 4);
  put(&out, &reply_len, 4);
  put(&out, m.reply_to.data(), m.reply_to.size());
  for (const WireEntry& e : m.entries) {
    put(&out, &e.key, 8);
    put(&out, &e.offset, 8);
    put(&out, &e.length, 4);
    put(&out, &e.crc, 4);
    put(&out, &e.status, 4);
  }
  return out;
}

Result<WireMessage> decode_message(std::span<const std::byte> bytes) {
  if (bytes.size() < kHeaderBytes) return fail(EINVAL, "transfer message: " + std::to_string(bytes.size()) + " bytes, shorter than its header");
  std::size_t at = 0;
  if (take<std::uint32_t>(bytes, &at) != kWireMagic) return fail(EPROTO, "transfer message: bad magic");
  if (take<std::uint16_t>(bytes, &at) != kWireVersion) return fail(EPROTO, "transfer message: unknown version");
  WireMessage m;
  const auto type = take<std::uint16_t>(bytes, &at);
  if (type < 1 || type > 4) return fail(EINVAL, "transfer message: unknown type " + std::to_string(type));
  m.type = static_cast<WireType>(type);
  m.id = take<std::uint64_t>(bytes, &at);
  const auto count = take<std::uint32_t>(bytes, &at);
  const auto reply_len = take<std::uint32_t>(bytes, &at);
  if (count == 0 || count > kMaxWireEntries) return fail(EINVAL, "transfer message: entry count " + std::to_string(count));
  if (reply_len > kMaxAddressBytes) return fail(EINVAL, "transfer message: reply address of " + std::to_string(reply_len) + " bytes");
  const bool request = m.type == WireType::kChecksumRequest || m.type == WireType::kVerifyRequest;
  if (request != (reply_len != 0)) return fail(EINVAL, "transfer message: requests, and only they, carry a reply address");
  if (bytes.size() != kHeaderBytes + reply_len + std::size_t{count} * kEntryBytes) {
    return fail(EINVAL, "transfer message: length " + std::to_string(bytes.size()) + " does not match its header");
  }
  m.reply_to.assign(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(at + reply_len));
  at += reply_len;
  m.entries.resize(count);
  for (WireEntry& e : m.entries) {
    e.key = take<std::uint64_t>(bytes, &at);
    e.offset = take<std::uint64_t>(bytes, &at);
    e.length = take<std::uint32_t>(bytes, &at);
    e.crc = take<std::uint32_t>(bytes, &at);
    e.status = take<std::uint32_t>(bytes, &at);
    if (request && (e.length == 0 || e.offset + e.length < e.offset)) {
      return fail(EINVAL, "transfer message: an entry of length 0 or past the end of the address space");
    }
    if (e.status > 4095) return fail(EINVAL, "transfer message: status " + std::to_string(e.status) + " is no errno");
  }
  return m;
}

}  // namespace cxlpool::hal
