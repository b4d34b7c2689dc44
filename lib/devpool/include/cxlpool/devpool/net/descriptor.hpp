// SPDX-License-Identifier: Apache-2.0
// The network engine's 16-byte record, carried by both channels of a link:
//
//   bytes 0..3   offset  u32  buffer offset inside an area of the link
//   bytes 4..5   length  u16  frame bytes (frames only; 0 otherwise)
//   bytes 6..7   kind    u16  one of DescriptorKind
//   bytes 8..15  cookie  u64  the frontend's MAC (announcements; first
//                             byte most significant), 0 otherwise
//
// little-endian. A frame names a buffer of the sender's area; a credit hands
// back a buffer of the receiver's area that the sender has finished with;
// an announcement (frontend to backend) says which MAC the frontend answers
// to, so that the backend steers received frames by destination.
//
// Every buffer is one fixed-size slot of its area (kNetBufferBytes), so a
// reference is valid only when it starts at a slot boundary and stays
// inside that slot: a hostile peer can name only whole buffers of its own
// area (frames) or of ours that it holds (credits, checked by BufferPool).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"

namespace cxlpool::devpool::net {

inline constexpr std::size_t kDescriptorBytes = 16;
// One buffer: the largest Ethernet frame at MTU 1500 with a VLAN tag (1518)
// rounded up to whole cache lines and a power of two.
inline constexpr std::uint32_t kNetBufferBytes = 2048;
inline constexpr std::uint32_t kMinFrameBytes = 14;

enum class DescriptorKind : std::uint16_t {
  kFrame = 1,
  kCredit = 2,
  kAnnounce = 3,
};

struct Descriptor {
  std::uint32_t offset = 0;
  std::uint16_t length = 0;
  DescriptorKind kind = DescriptorKind::kFrame;
  std::uint64_t cookie = 0;

  static Descriptor frame(std::uint32_t offset, std::uint16_t length) {
    return {offset, length, DescriptorKind::kFrame, 0};
  }
  static Descriptor credit(std::uint32_t offset) { return {offset, 0, DescriptorKind::kCredit, 0}; }
  static Descriptor announce(std::uint64_t mac) { return {0, 0, DescriptorKind::kAnnounce, mac}; }
};

void encode_descriptor(const Descriptor& d, std::byte* out16);

// EBADMSG for an unknown kind, a frame shorter than an Ethernet header or
// longer than a buffer, or fields a kind does not use that are not zero.
// Buffer bounds are checked by frame_bytes / BufferPool::release.
Result<Descriptor> decode_descriptor(const std::byte* in16);

// The bytes of a decoded frame inside the sender's `area`: EBADMSG when the
// offset is not a buffer boundary or the buffer lies outside the area.
Result<std::span<std::byte>> frame_bytes(std::span<std::byte> area, const Descriptor& frame);

}  // namespace cxlpool::devpool::net
