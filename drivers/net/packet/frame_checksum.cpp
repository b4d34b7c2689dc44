// SPDX-License-Identifier: Apache-2.0
#include "frame_checksum.hpp"

#include <cstdint>

namespace cxlpool::drivers {
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

bool fill(std::byte* l4, std::size_t l4_length, std::uint8_t protocol, std::uint64_t pseudo) {
  const std::size_t field = protocol == kTcp ? 16 : 6;
  if (l4_length < (protocol == kTcp ? 20u : 8u)) return false;
  l4[field] = l4[field + 1] = std::byte{0};
  std::uint16_t sum = static_cast<std::uint16_t>(~fold(add_words(pseudo, l4, l4_length)));
  if (protocol == kUdp && sum == 0) sum = 0xffff;  // 0 would mean "no checksum"
  l4[field] = static_cast<std::byte>(sum >> 8);
  l4[field + 1] = static_cast<std::byte>(sum & 0xff);
  return true;
}

}  // namespace

bool complete_transport_checksum(std::byte* frame, std::size_t length) {
  if (length < kEthernetHeader + 20) return false;
  const std::uint16_t ethertype = be16(frame + 12);
  std::byte* ip = frame + kEthernetHeader;
  const std::size_t ip_room = length - kEthernetHeader;
  if (ethertype == 0x0800) {
    const std::size_t header = (static_cast<unsigned>(ip[0]) & 0x0f) * 4u;
    const std::size_t total = be16(ip + 2);
    const std::uint8_t protocol = static_cast<std::uint8_t>(ip[9]);
    const bool fragment = (be16(ip + 6) & 0x3fff) != 0;  // MF set or an offset
    if ((static_cast<unsigned>(ip[0]) >> 4) != 4 || header < 20 || total > ip_room || total < header || fragment) {
      return false;
    }
    if (protocol != kTcp && protocol != kUdp) return false;
    const std::size_t l4_length = total - header;
    std::uint64_t pseudo = add_words(0, ip + 12, 8);  // source and destination
    pseudo += protocol + l4_length;
    return fill(ip + header, l4_length, protocol, pseudo);
  }
  if (ethertype == 0x86dd) {
    if (ip_room < 40 || (static_cast<unsigned>(ip[0]) >> 4) != 6) return false;
    const std::size_t l4_length = be16(ip + 4);
    const std::uint8_t protocol = static_cast<std::uint8_t>(ip[6]);
    if (l4_length > ip_room - 40 || (protocol != kTcp && protocol != kUdp)) return false;
    std::uint64_t pseudo = add_words(0, ip + 8, 32);
    pseudo += protocol + l4_length;
    return fill(ip + 40, l4_length, protocol, pseudo);
  }
  return false;
}

}  // namespace cxlpool::drivers
