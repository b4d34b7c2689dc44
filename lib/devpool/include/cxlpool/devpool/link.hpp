// SPDX-License-Identifier: Apache-2.0
// A device link: everything one frontend shares with one backend for one
// device, in one range of the shared memory.
//
//   header line        magic, version, geometry (written once by the creator)
//   request channel    frontend -> backend (packets to send, block commands)
//   completion channel backend -> frontend (received packets, completions)
//   frontend buffers   written by the frontend only (TX frames, write data,
//                      and the read buffers it lends the backend)
//   backend buffers    written by the backend only (RX frames)
//
// Buffers are referenced by (offset, length) inside the sender's area; the
// receiver checks every reference against that area before touching it, so
// a hostile or corrupt peer can at worst hand over wrong bytes of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::devpool {

inline constexpr uint32_t kLinkMagic = 0x4b4e'4c58;  // "XLNK"
inline constexpr uint16_t kLinkVersion = 1;

struct LinkGeometry {
  ChannelGeometry requests{};
  ChannelGeometry completions{};
  uint64_t frontend_buffer_bytes = 4u << 20;  // multiple of 4096
  uint64_t backend_buffer_bytes = 4u << 20;   // multiple of 4096
};

// Bytes a link occupies; every area starts 4096-aligned (O_DIRECT buffers).
size_t link_bytes(const LinkGeometry& g);

Result<void> format_link(std::span<std::byte> memory, const LinkGeometry& g);

// The areas of a formatted link (validated header).
struct LinkView {
  LinkGeometry geometry;
  std::span<std::byte> request_channel;
  std::span<std::byte> completion_channel;
  std::span<std::byte> frontend_buffers;
  std::span<std::byte> backend_buffers;
};
// EPROTO for a bad header, EINVAL for a range shorter than the header says.
Result<LinkView> open_link(std::span<std::byte> memory);

// A buffer reference carried in a record, checked against the sender's area:
// EBADMSG when [offset, offset + length) is not inside `area` (overflow-safe).
Result<std::span<std::byte>> checked_buffer(std::span<std::byte> area, uint64_t offset, uint64_t length);

}  // namespace cxlpool::devpool
