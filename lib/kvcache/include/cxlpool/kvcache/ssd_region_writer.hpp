// SPDX-License-Identifier: Apache-2.0
#pragma once
// Fills one region in memory: a 4 KiB-aligned buffer of region_bytes that the
// store writes to the device with O_DIRECT, whole (sync per region) or entry
// by entry (sync per commit). The buffer is reused for region after region.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/ssd_format.hpp"

namespace cxlpool::kvcache {

enum class AppendStatus {
  kOk,
  kRegionFull,  // does not fit in what is left: seal this region, retry in the next
  kTooLarge,    // larger than an empty region can hold: never fits
};

struct AppendResult {
  AppendStatus status = AppendStatus::kOk;
  std::uint32_t offset = 0;          // of the entry's header block, from the region start
  std::uint32_t payload_offset = 0;  // offset + 4096: where an O_DIRECT read of the payload starts
  std::uint32_t extent = 0;          // bytes [offset, offset + extent) to write for this entry
  std::uint32_t payload_crc = 0;     // crc32c of the payload, as the entry header holds it
};

class RegionWriter {
 public:
  // EINVAL for a bad region size (see validate_region_bytes), ENOMEM when the
  // buffer cannot be allocated. The writer starts with no open region.
  static Result<RegionWriter> create(std::uint32_t region_bytes = kDefaultRegionBytes);

  // Starts filling region region_index with a new generation (nonzero and
  // larger than any this region had before: the store's job). Writes the
  // open header into the header block.
  void open(std::uint32_t region_index, std::uint64_t generation);

  // Appends one entry (copying the payload) if it fits; tombstones pass
  // kEntryTombstone and an empty payload. Requires an open region.
  AppendResult append(const ChunkKey& key, const NamespaceFingerprint& ns, std::uint64_t sequence,
                      std::span<const std::byte> payload, std::uint16_t flags = 0);
  // Appends one entry's header (CRC `known_crc`, or computed by reading
  // `payload`) and leaves the payload's place in the buffer as it is: the
  // caller writes the payload to the device from its own memory. Same fit
  // rules as append().
  AppendResult append_header(const ChunkKey& key, const NamespaceFingerprint& ns, std::uint64_t sequence,
                             std::span<const std::byte> payload,
                             std::optional<std::uint32_t> known_crc = std::nullopt);

  // Finalises the header (sealed, used_bytes, entry_count) and returns the
  // bytes to write at the region's device offset: [0, used_bytes). The region
  // stays readable through bytes() until the next open().
  std::span<const std::byte> seal();

  // The header block as it is now (open or sealed): written first, and synced
  // with the first entry, under the per-commit policy.
  [[nodiscard]] std::span<const std::byte> header_block() const { return bytes(0, kSsdBlockBytes); }
  // Any range of the buffer (clamped to the region), e.g. an entry's extent.
  [[nodiscard]] std::span<const std::byte> bytes(std::uint32_t offset, std::uint32_t length) const;

  [[nodiscard]] bool is_open() const { return open_; }
  // The whole buffer (region_bytes), e.g. to register it with a device.
  [[nodiscard]] std::byte* data() const { return buffer_.get(); }
  [[nodiscard]] const RegionHeader& header() const { return header_; }
  [[nodiscard]] std::uint32_t region_bytes() const { return header_.region_bytes; }
  [[nodiscard]] std::uint32_t used_bytes() const { return header_.used_bytes; }
  [[nodiscard]] std::uint32_t free_bytes() const { return header_.region_bytes - header_.used_bytes; }
  [[nodiscard]] std::uint32_t entry_count() const { return header_.entry_count; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };

  explicit RegionWriter(std::unique_ptr<std::byte, FreeDeleter> buffer, std::uint32_t region_bytes);
  void write_header();
  AppendResult add_entry(const ChunkKey& key, const NamespaceFingerprint& ns, std::uint64_t sequence,
                         std::span<const std::byte> payload, std::uint16_t flags, bool copy_payload,
                         std::optional<std::uint32_t> known_crc = std::nullopt);

  std::unique_ptr<std::byte, FreeDeleter> buffer_;
  RegionHeader header_;
  bool open_ = false;
};

}  // namespace cxlpool::kvcache
