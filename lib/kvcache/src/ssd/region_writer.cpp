// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/ssd_region_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/stream_copy.hpp"

namespace cxlpool::kvcache {

void RegionWriter::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

Result<RegionWriter> RegionWriter::create(std::uint32_t region_bytes) {
  if (auto ok = validate_region_bytes(region_bytes); !ok) return tl::unexpected(ok.error());
  auto* raw = static_cast<std::byte*>(std::aligned_alloc(kSsdBlockBytes, region_bytes));
  if (raw == nullptr) return fail(ENOMEM, "region buffer of " + std::to_string(region_bytes) + " bytes");
  return RegionWriter(std::unique_ptr<std::byte, FreeDeleter>(raw), region_bytes);
}

RegionWriter::RegionWriter(std::unique_ptr<std::byte, FreeDeleter> buffer, std::uint32_t region_bytes)
    : buffer_(std::move(buffer)) {
  header_.region_bytes = region_bytes;
  // The whole buffer goes to disk under the per-region policy: never leak
  // uninitialised heap memory to the device.
  std::memset(buffer_.get(), 0, region_bytes);
}

void RegionWriter::open(std::uint32_t region_index, std::uint64_t generation) {
  header_.version = kSsdFormatVersion;
  header_.flags = 0;
  header_.region_index = region_index;
  header_.generation = generation;
  header_.used_bytes = kSsdBlockBytes;
  header_.entry_count = 0;
  open_ = true;
  write_header();
}

void RegionWriter::write_header() {
  std::memset(buffer_.get(), 0, kSsdBlockBytes);
  const auto h = encode_region_header(header_);
  std::memcpy(buffer_.get(), h.data(), h.size());
}

AppendResult RegionWriter::append(const ChunkKey& key, const NamespaceFingerprint& ns, std::uint64_t sequence,
                                  std::span<const std::byte> payload, std::uint16_t flags) {
  return add_entry(key, ns, sequence, payload, flags, true);
}

AppendResult RegionWriter::append_header(const ChunkKey& key, const NamespaceFingerprint& ns,
                                         std::uint64_t sequence, std::span<const std::byte> payload,
                                         std::optional<std::uint32_t> known_crc) {
  return add_entry(key, ns, sequence, payload, 0, false, known_crc);
}

AppendResult RegionWriter::add_entry(const ChunkKey& key, const NamespaceFingerprint& ns, std::uint64_t sequence,
                                     std::span<const std::byte> payload, std::uint16_t flags,
                                     bool copy_payload, std::optional<std::uint32_t> known_crc) {
  AppendResult r;
  if (payload.size() > max_payload_bytes(header_.region_bytes)) {
    r.status = AppendStatus::kTooLarge;
    return r;
  }
  const auto payload_bytes = static_cast<std::uint32_t>(payload.size());
  const auto extent = static_cast<std::uint32_t>(entry_extent(payload_bytes));
  if (!open_ || extent > free_bytes()) {
    r.status = AppendStatus::kRegionFull;
    return r;
  }
  std::byte* at = buffer_.get() + header_.used_bytes;
  // One pass over the payload: checksummed as it is copied in, or only read
  // when the caller writes it out from its own memory (and has no CRC).
  std::uint32_t payload_crc = 0;
  if (!copy_payload && known_crc) {
    payload_crc = *known_crc;
  } else {
    payload_crc = payload.empty() || !copy_payload
                      ? crc32c(payload)
                      : stream_copy_crc32c(at + kSsdBlockBytes, payload.data(), payload.size());
  }
  EntryHeader h;
  h.flags = flags;
  h.key = key;
  h.ns = ns;
  h.sequence = sequence;
  h.region_generation = header_.generation;
  h.payload_bytes = payload_bytes;
  h.payload_crc = payload_crc;
  const auto encoded = encode_entry_header(h);
  std::memset(at, 0, kSsdBlockBytes);
  std::memcpy(at, encoded.data(), encoded.size());
  // Padding is outside the CRC; zero it so the disk holds no stale bytes.
  std::memset(at + kSsdBlockBytes + payload_bytes, 0, extent - kSsdBlockBytes - payload_bytes);
  r.offset = header_.used_bytes;
  r.payload_offset = r.offset + kSsdBlockBytes;
  r.extent = extent;
  r.payload_crc = payload_crc;
  header_.used_bytes += extent;
  ++header_.entry_count;
  return r;
}

std::span<const std::byte> RegionWriter::seal() {
  header_.flags |= kRegionSealed;
  write_header();
  open_ = false;
  return bytes(0, header_.used_bytes);
}

std::span<const std::byte> RegionWriter::bytes(std::uint32_t offset, std::uint32_t length) const {
  const std::uint32_t start = std::min(offset, header_.region_bytes);
  const std::uint32_t n = std::min(length, header_.region_bytes - start);
  return {buffer_.get() + start, n};
}

}  // namespace cxlpool::kvcache
