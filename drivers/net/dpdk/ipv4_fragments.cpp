// SPDX-License-Identifier: Apache-2.0
#include "ipv4_fragments.hpp"

#include <algorithm>
#include <cstring>

namespace cxlpool::drivers {
namespace {

constexpr std::size_t kEthernet = 14;
constexpr std::size_t kIpHeader = 20;  // without options: nothing to copy or drop per fragment

unsigned byte_at(std::span<const std::byte> f, std::size_t i) { return static_cast<unsigned>(f[i]); }
unsigned be16(std::span<const std::byte> f, std::size_t i) { return (byte_at(f, i) << 8) | byte_at(f, i + 1); }

void put16(std::byte* p, unsigned value) {
  p[0] = static_cast<std::byte>((value >> 8) & 0xff);
  p[1] = static_cast<std::byte>(value & 0xff);
}

// Payload bytes per fragment: what fits the MTU, in 8-byte units.
std::size_t piece_bytes(std::uint32_t mtu) { return ((mtu - kIpHeader) / 8) * 8; }

std::size_t payload_bytes(std::span<const std::byte> frame) { return be16(frame, kEthernet + 2) - kIpHeader; }

}  // namespace

std::size_t ipv4_fragment_count(std::span<const std::byte> frame, std::uint32_t mtu) {
  if (mtu < kIpHeader + 8 || frame.size() < kEthernet + kIpHeader) return 0;
  if (be16(frame, 12) != 0x0800 || byte_at(frame, kEthernet) != 0x45) return 0;
  const std::size_t total = be16(frame, kEthernet + 2);
  // Already a fragment (offset or more-fragments set), or not all here.
  if ((be16(frame, kEthernet + 6) & 0x3fff) != 0 || total < kIpHeader || kEthernet + total > frame.size()) return 0;
  if (total <= mtu) return 0;
  const std::size_t piece = piece_bytes(mtu);
  return (total - kIpHeader + piece - 1) / piece;
}

std::size_t write_ipv4_fragment(std::span<const std::byte> frame, std::uint32_t mtu, std::size_t index,
                                std::span<std::byte> out) {
  const std::size_t piece = piece_bytes(mtu);
  const std::size_t payload = payload_bytes(frame);
  const std::size_t offset = index * piece;
  const std::size_t length = std::min(piece, payload - offset);
  const std::size_t frame_bytes = kEthernet + kIpHeader + length;
  std::byte header[kEthernet + kIpHeader];
  std::memcpy(header, frame.data(), sizeof(header));
  std::byte* ip = header + kEthernet;
  put16(ip + 2, static_cast<unsigned>(kIpHeader + length));
  const bool more = offset + length < payload;
  // The don't-fragment bit stays as the datagram had it (clear: it was fragmented).
  put16(ip + 6, (be16(frame, kEthernet + 6) & 0x4000) | (more ? 0x2000u : 0u) | static_cast<unsigned>(offset / 8));
  put16(ip + 10, 0);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < kIpHeader; i += 2) {
    sum += (static_cast<unsigned>(ip[i]) << 8) | static_cast<unsigned>(ip[i + 1]);
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  put16(ip + 10, ~sum & 0xffff);
  const std::size_t head = std::min(out.size(), sizeof(header));
  std::memcpy(out.data(), header, head);
  if (out.size() > sizeof(header)) {
    std::memcpy(out.data() + sizeof(header), frame.data() + kEthernet + kIpHeader + offset,
                std::min(length, out.size() - sizeof(header)));
  }
  return frame_bytes;
}

}  // namespace cxlpool::drivers
