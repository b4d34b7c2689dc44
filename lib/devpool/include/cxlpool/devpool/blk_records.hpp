// SPDX-License-Identifier: Apache-2.0
// The storage engine's wire records, carried by a link's two channels.
//
// A command is one request-channel record of 56 bytes: with the slot's
// sequence word it fills one 64-byte line, like an NVMe submission queue
// entry. A completion is one 16-byte completion-channel record (three per
// line). Data never travels in a record: a command names a buffer by its
// offset in the frontend's buffer area, and the backend reads a write's data
// from it or DMAs a read's data (an O_DIRECT read) into it.
//
// Command (little-endian):
//    0 u8  opcode          kFlush, kWrite, kRead, kIdentify (NVMe's numbers)
//    1 u8  flags           kFlagFua (writes only); other bits must be zero
//    2 u16 namespace_id    kNamespaceId: a link serves one device
//    4 u32 command_id      chosen by the frontend, echoed in the completion
//    8 u64 offset          device byte offset (block aligned)
//   16 u32 length          bytes (block aligned, 1..max_transfer)
//   20 u32 reserved        zero
//   24 u64 buffer_offset   in the frontend buffer area
//   32 ..55               reserved, zero
// Completion:
//    0 u32 command_id
//    4 i32 status          0 or a negative errno (-4095..-1)
//    8 u32 bytes           transferred (0 when status < 0)
//   12 u32 reserved        zero
//
// Every record is read from memory the other side can write at any time:
// decoding copies it first and checks every field; a command is then checked
// against the device (alignment, capacity) and the frontend's area before
// the backend touches either.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/link.hpp"

namespace cxlpool::devpool::blk {

inline constexpr std::size_t kCommandBytes = 56;
inline constexpr std::size_t kCompletionBytes = 16;
inline constexpr std::size_t kIdentifyBytes = 64;
inline constexpr std::uint16_t kNamespaceId = 1;
// Largest transfer one command may ask for (a device may announce less).
inline constexpr std::uint32_t kMaxTransferBytes = 8u << 20;
inline constexpr std::uint32_t kIdentifyMagic = 0x4b4c'4258;  // "XBLK"
inline constexpr std::uint16_t kIdentifyVersion = 1;

enum class Opcode : std::uint8_t { kFlush = 0x00, kWrite = 0x01, kRead = 0x02, kIdentify = 0x06 };
const char* opcode_name(Opcode op);

// Write with forced unit access: the data is durable when the command completes.
inline constexpr std::uint8_t kFlagFua = 0x01;

struct Command {
  Opcode opcode = Opcode::kRead;
  std::uint8_t flags = 0;
  std::uint16_t namespace_id = kNamespaceId;
  std::uint32_t command_id = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint64_t buffer_offset = 0;
  bool operator==(const Command&) const = default;
};

struct Completion {
  std::uint32_t command_id = 0;
  std::int32_t status = 0;
  std::uint32_t bytes = 0;
  bool operator==(const Completion&) const = default;
};

// What a backend announces in answer to kIdentify (written into the
// command's buffer, kIdentifyBytes long).
inline constexpr std::uint32_t kIdentifyReadOnly = 0x1;
struct DeviceInfo {
  std::uint64_t capacity = 0;          // bytes, a multiple of block_size
  std::uint32_t block_size = 512;      // offsets and lengths are multiples (power of two, 512..64 KiB)
  std::uint32_t mem_alignment = 512;   // buffer offsets are multiples (power of two, ≤ 4096)
  std::uint32_t max_transfer = kMaxTransferBytes;  // multiple of block_size, ≤ kMaxTransferBytes
  std::uint32_t queue_depth = 32;      // commands the backend keeps in flight (1..65536)
  std::uint32_t flags = 0;             // kIdentifyReadOnly
  bool read_only() const { return (flags & kIdentifyReadOnly) != 0; }
  bool operator==(const DeviceInfo&) const = default;
};

using CommandBytes = std::array<std::byte, kCommandBytes>;
using CompletionBytes = std::array<std::byte, kCompletionBytes>;
using IdentifyBytes = std::array<std::byte, kIdentifyBytes>;

CommandBytes encode_command(const Command& c);
// EBADMSG: wrong size, non-zero reserved bytes, unknown flags, another
// namespace; EOPNOTSUPP: an opcode this version does not know. The command id
// of a record that does not decode is still command_id_of(bytes), so the
// backend can answer it.
Result<Command> decode_command(std::span<const std::byte> bytes);
std::uint32_t command_id_of(std::span<const std::byte, kCommandBytes> bytes);

CompletionBytes encode_completion(const Completion& c);
// EBADMSG: wrong size, non-zero reserved bytes, a status outside
// -4095..0, bytes reported with an error.
Result<Completion> decode_completion(std::span<const std::byte> bytes);

IdentifyBytes encode_identify(const DeviceInfo& info);
// EBADMSG: wrong magic, version or a field outside the bounds above.
Result<DeviceInfo> decode_identify(std::span<const std::byte> bytes);
Result<void> validate_device_info(const DeviceInfo& info);

// Checks a decoded command against the device and the frontend's buffer area
// and returns the buffer it names (empty for kFlush). EINVAL: zero, unaligned
// or oversized length, unaligned offset or buffer, a flush or identify that
// carries fields it must not, FUA on a non-write; ERANGE: past the capacity;
// EFAULT: the buffer is not inside `frontend_area`; EROFS: a write to a
// read-only device. Overflow-safe for any field values.
Result<std::span<std::byte>> validate_command(const Command& c, const DeviceInfo& device,
                                              std::span<std::byte> frontend_area);

// The geometry of a link for the storage engine: `slots` commands in the
// request channel, completions for as many (three per slot) and a
// frontend buffer area of `buffer_bytes` (rounded up to 4096); no backend area.
LinkGeometry blk_link_geometry(std::uint32_t slots, std::uint64_t buffer_bytes,
                               Coherence coherence = Coherence::kCoherent);
// EPROTO unless the link's channels carry blk records.
Result<void> check_blk_link(const LinkGeometry& g);

}  // namespace cxlpool::devpool::blk
