// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/driver/frame_checksum.hpp"

#include <cstdint>
#include <optional>

namespace cxlpool::hal {
namespace {

constexpr std::size_t kEthernetHeader = 14;
constexpr std::uint8_t kTcp = 6;
constexpr std::uint8_t kUdp = 17;

std::uint16_t be16(const std::byte* p) {
  return static_cast<std::uint16_t>((static_cast<unsigned>(p[0]) << 8) | static_cast<unsigned>(p[1]));
}

// One's-complement sum of 16-bit big-endian words (an odd tail byte padded).
std::uint64_t add_words(std::uint64_t sum, const std::byte* p, std::size_t n) {
  for (; n >= 2; p += 2, n -= 2) sum += be16(p);
  if (n == 1) sum += static_cast<unsigned>(p[0]) << 8;
  return sum;
}

std::uint16_t fold(std::uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

// The transport header of a TCP or UDP frame and its pseudo-header sum.
struct Transport {
  std::byte* l4;
  std::size_t l4_length;
  std::uint8_t protocol;
  std::uint64_t pseudo;

  std::size_t field() const { return protocol == kTcp ? 16 : 6; }
};

// nullopt for anything but TCP or UDP over unfragmented IPv4 or IPv6 without
// extension headers, or a frame too short for its headers.
std::optional<Transport> find_transport(std::byte* frame, std::size_t length) {
  if (length < kEthernetHeader + 20) return std::nullopt;
  const std::uint16_t ethertype = be16(frame + 12);
  std::byte* ip = frame + kEthernetHeader;
  const std::size_t ip_room = length - kEthernetHeader;
  std::optional<Transport> found;
  if (ethertype == 0x0800) {
    const std::size_t header = (static_cast<unsigned>(ip[0]) & 0x0f) * 4u;
    const std::size_t total = be16(ip + 2);
    const bool fragment = (be16(ip + 6) & 0x3fff) != 0;  // MF set or an offset
    if ((static_cast<unsigned>(ip[0]) >> 4) != 4 || header < 20 || total > ip_room || total < header || fragment) {
      return std::nullopt;
    }
    const auto protocol = static_cast<std::uint8_t>(ip[9]);
    const std::size_t l4_length = total - header;
    found = Transport{ip + header, l4_length, protocol, add_words(0, ip + 12, 8) + protocol + l4_length};
  } else if (ethertype == 0x86dd) {
    if (ip_room < 40 || (static_cast<unsigned>(ip[0]) >> 4) != 6) return std::nullopt;
    const std::size_t l4_length = be16(ip + 4);
    if (l4_length > ip_room - 40) return std::nullopt;
    const auto protocol = static_cast<std::uint8_t>(ip[6]);
    found = Transport{ip + 40, l4_length, protocol, add_words(0, ip + 8, 32) + protocol + l4_length};
  }
  if (!found || (found->protocol != kTcp && found->protocol != kUdp)) return std::nullopt;
  if (found->l4_length < (found->protocol == kTcp ? 20u : 8u)) return std::nullopt;
  return found;
}

void fill(const Transport& t) {
  std::byte* field = t.l4 + t.field();
  field[0] = field[1] = std::byte{0};
  std::uint16_t sum = static_cast<std::uint16_t>(~fold(add_words(t.pseudo, t.l4, t.l4_length)));
  if (t.protocol == kUdp && sum == 0) sum = 0xffff;  // 0 would mean "no checksum"
  field[0] = static_cast<std::byte>(sum >> 8);
  field[1] = static_cast<std::byte>(sum & 0xff);
}

}  // namespace

bool complete_transport_checksum(std::byte* frame, std::size_t length) {
  auto t = find_transport(frame, length);
  if (!t) return false;
  fill(*t);
  return true;
}

bool complete_offloaded_transport_checksum(std::byte* frame, std::size_t length) {
  auto t = find_transport(frame, length);
  if (!t) return false;
  const std::uint16_t stored = be16(t->l4 + t->field());
  if (t->protocol == kUdp && stored == 0) return false;  // sent without a checksum
  // A correct checksum makes the whole sum, pseudo-header included, 0xffff.
  if (fold(add_words(t->pseudo, t->l4, t->l4_length)) == 0xffff) return false;
  // What an offloading sender leaves: the folded pseudo-header sum.
  if (stored != fold(t->pseudo)) return false;
  fill(*t);
  return true;
}

}  // namespace cxlpool::hal
