// SPDX-License-Identifier: Apache-2.0
#pragma once
// On-disk format of the SSD tier (normative description: docs/kvstore-format.md).
// The device is an array of fixed-size regions. A region starts with a 4 KiB
// header block, then holds entries back to back; every entry is a 4 KiB
// header block followed by its payload, padded to 4 KiB. Every payload thus
// starts 4 KiB-aligned on disk and can be read with O_DIRECT straight into an
// arena slot without touching its header. All integers are little-endian.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/kvcache/namespace.hpp"

namespace cxlpool::kvcache {

// Alignment unit of everything on disk (O_DIRECT on 4Kn and 512e devices).
inline constexpr std::uint32_t kSsdBlockBytes = 4096;
inline constexpr std::uint32_t kSsdFormatVersion = 1;
inline constexpr std::uint32_t kRegionMagic = 0x4752564B;  // bytes "KVRG"
inline constexpr std::uint32_t kEntryMagic = 0x4E45564B;   // bytes "KVEN"
inline constexpr std::uint32_t kRegionHeaderBytes = 64;
inline constexpr std::uint32_t kEntryHeaderBytes = 80;
inline constexpr std::uint32_t kDefaultRegionBytes = 16u << 20;
// A region holds its header block and at least one entry block.
inline constexpr std::uint32_t kMinRegionBytes = 2 * kSsdBlockBytes;
inline constexpr std::uint32_t kMaxRegionBytes = 1u << 30;

// Region header flags.
inline constexpr std::uint16_t kRegionSealed = 1u << 0;  // used_bytes and entry_count are final
inline constexpr std::uint16_t kRegionKnownFlags = kRegionSealed;
// Entry header flags.
inline constexpr std::uint16_t kEntryTombstone = 1u << 0;  // the key is deleted; no payload
inline constexpr std::uint16_t kEntryKnownFlags = kEntryTombstone;

struct RegionHeader {
  std::uint16_t version = kSsdFormatVersion;
  std::uint16_t flags = 0;
  std::uint32_t region_index = 0;  // position on the device: byte offset = index * region_bytes
  std::uint32_t region_bytes = kDefaultRegionBytes;
  std::uint64_t generation = 0;    // nonzero; larger = written later (region FIFO order)
  std::uint32_t used_bytes = kSsdBlockBytes;  // end of the last entry (sealed regions)
  std::uint32_t entry_count = 0;               // entries in the region (sealed regions)

  [[nodiscard]] bool sealed() const { return (flags & kRegionSealed) != 0; }
  friend bool operator==(const RegionHeader&, const RegionHeader&) = default;
};

struct EntryHeader {
  std::uint16_t version = kSsdFormatVersion;
  std::uint16_t flags = 0;
  ChunkKey key;
  NamespaceFingerprint ns;
  std::uint64_t sequence = 0;           // store-wide write order: the larger wins for one key
  std::uint64_t region_generation = 0;  // generation of the region it was written into
  std::uint32_t payload_bytes = 0;
  std::uint32_t payload_crc = 0;        // crc32c of exactly payload_bytes bytes (no padding)

  [[nodiscard]] bool tombstone() const { return (flags & kEntryTombstone) != 0; }
  friend bool operator==(const EntryHeader&, const EntryHeader&) = default;
};

[[nodiscard]] constexpr std::uint64_t align_up_block(std::uint64_t n) {
  return (n + kSsdBlockBytes - 1) / kSsdBlockBytes * kSsdBlockBytes;
}

// Bytes an entry occupies on disk: its header block plus the padded payload.
[[nodiscard]] constexpr std::uint64_t entry_extent(std::uint32_t payload_bytes) {
  return kSsdBlockBytes + align_up_block(payload_bytes);
}

// Largest payload a region of region_bytes can hold.
[[nodiscard]] constexpr std::uint32_t max_payload_bytes(std::uint32_t region_bytes) {
  return region_bytes < kMinRegionBytes ? 0 : region_bytes - 2 * kSsdBlockBytes;
}

// EINVAL unless region_bytes is a multiple of 4 KiB in [kMinRegionBytes, kMaxRegionBytes].
Result<void> validate_region_bytes(std::uint32_t region_bytes);

// Encodes the header with its CRC; the caller places it at offset 0 of the
// region's zero-filled header block.
[[nodiscard]] std::array<std::byte, kRegionHeaderBytes> encode_region_header(const RegionHeader& h);

// Decodes the first kRegionHeaderBytes of bytes. Errors:
//   ENODATA  the bytes are all zero (a region never written)
//   ENOTSUP  a format version this reader does not know
//   EBADMSG  too short, bad magic, header CRC mismatch, unknown flags, nonzero
//            reserved bytes, bad geometry (region_bytes, used_bytes), generation 0
[[nodiscard]] Result<RegionHeader> decode_region_header(std::span<const std::byte> bytes);

// Encodes the header with its CRC (payload_crc is taken as given).
[[nodiscard]] std::array<std::byte, kEntryHeaderBytes> encode_entry_header(const EntryHeader& h);

// Decodes the first kEntryHeaderBytes of bytes. Errors:
//   ENODATA  the bytes are all zero (unwritten space)
//   ENOTSUP  a format version this reader does not know
//   EBADMSG  too short, bad magic, header CRC mismatch, unknown flags, nonzero
//            reserved bytes, a tombstone with a payload, a payload no region holds
[[nodiscard]] Result<EntryHeader> decode_entry_header(std::span<const std::byte> bytes);

// True when payload is exactly the header's payload (length and CRC). A read
// that fails this must be dropped, never served.
[[nodiscard]] bool verify_entry(const EntryHeader& h, std::span<const std::byte> payload);

}  // namespace cxlpool::kvcache
