// SPDX-License-Identifier: Apache-2.0
// Region header: 64 bytes at offset 0 of a region (layout in
// docs/kvstore-format.md).
#include <cerrno>
#include <string>

#include "cxlpool/kvcache/ssd_format.hpp"
#include "sealed_header.hpp"

namespace cxlpool::kvcache {

Result<void> validate_region_bytes(std::uint32_t region_bytes) {
  if (region_bytes < kMinRegionBytes || region_bytes > kMaxRegionBytes || region_bytes % kSsdBlockBytes != 0) {
    return fail(EINVAL, "region size " + std::to_string(region_bytes) +
                            " is not a multiple of 4096 between 8 KiB and 1 GiB");
  }
  return {};
}

namespace {

using ssd_detail::LeField;

// After magic, version and flags; 28 reserved bytes follow, then the CRC.
using RegionFields = ssd_detail::HeaderFields<LeField<&RegionHeader::region_index, 8>,
                                              LeField<&RegionHeader::region_bytes, 12>,
                                              LeField<&RegionHeader::generation, 16>,
                                              LeField<&RegionHeader::used_bytes, 24>,
                                              LeField<&RegionHeader::entry_count, 28>>;

constexpr ssd_detail::SealedHeaderLayout kLayout{"region header", "region never written (zero header)",
                                                 kRegionHeaderBytes, kRegionMagic, kRegionKnownFlags, 32};

// EBADMSG: a bad region size, used bytes out of range or misaligned,
// generation 0, more entries than the used bytes hold.
Result<void> check_fields(const RegionHeader& h) {
  if (!validate_region_bytes(h.region_bytes)) return fail(EBADMSG, "region header: bad region size");
  if (h.used_bytes < kSsdBlockBytes || h.used_bytes > h.region_bytes || h.used_bytes % kSsdBlockBytes != 0) {
    return fail(EBADMSG, "region header: used bytes " + std::to_string(h.used_bytes) + " out of range or misaligned");
  }
  if (h.generation == 0) return fail(EBADMSG, "region header: generation 0");
  // Every entry takes at least one block.
  if (h.entry_count > (h.used_bytes - kSsdBlockBytes) / kSsdBlockBytes) {
    return fail(EBADMSG, "region header: entry count exceeds used space");
  }
  return {};
}

}  // namespace

std::array<std::byte, kRegionHeaderBytes> encode_region_header(const RegionHeader& h) {
  return ssd_detail::encode_sealed<RegionFields, kRegionHeaderBytes>(h, kLayout);
}

Result<RegionHeader> decode_region_header(std::span<const std::byte> bytes) {
  return ssd_detail::decode_sealed<RegionFields>(bytes, kLayout, check_fields);
}

}  // namespace cxlpool::kvcache
