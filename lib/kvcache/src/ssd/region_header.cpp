// SPDX-License-Identifier: Apache-2.0
// Region header: 64 bytes at offset 0 of a region (layout in
// docs/kvstore-format.md).
#include <cerrno>
#include <string>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/kvcache/ssd_format.hpp"
#include "le_fields.hpp"
#include "sealed_header.hpp"

namespace cxlpool::kvcache {

using ssd_detail::all_zero;
using ssd_detail::load_le;
using ssd_detail::store_le;

namespace {

constexpr std::size_t kOffMagic = 0;
constexpr std::size_t kOffVersion = 4;
constexpr std::size_t kOffFlags = 6;
constexpr std::size_t kOffIndex = 8;
constexpr std::size_t kOffRegionBytes = 12;
constexpr std::size_t kOffGeneration = 16;
constexpr std::size_t kOffUsed = 24;
constexpr std::size_t kOffCount = 28;
constexpr std::size_t kOffReserved = 32;  // 28 bytes of zero
constexpr std::size_t kOffCrc = 60;

}  // namespace

Result<void> validate_region_bytes(std::uint32_t region_bytes) {
  if (region_bytes < kMinRegionBytes || region_bytes > kMaxRegionBytes || region_bytes % kSsdBlockBytes != 0) {
    return fail(EINVAL, "region size " + std::to_string(region_bytes) +
                            " is not a multiple of 4096 between 8 KiB and 1 GiB");
  }
  return {};
}

std::array<std::byte, kRegionHeaderBytes> encode_region_header(const RegionHeader& h) {
  std::array<std::byte, kRegionHeaderBytes> b{};
  store_le<std::uint32_t>(&b[kOffMagic], kRegionMagic);
  store_le<std::uint16_t>(&b[kOffVersion], h.version);
  store_le<std::uint16_t>(&b[kOffFlags], h.flags);
  store_le<std::uint32_t>(&b[kOffIndex], h.region_index);
  store_le<std::uint32_t>(&b[kOffRegionBytes], h.region_bytes);
  store_le<std::uint64_t>(&b[kOffGeneration], h.generation);
  store_le<std::uint32_t>(&b[kOffUsed], h.used_bytes);
  store_le<std::uint32_t>(&b[kOffCount], h.entry_count);
  store_le<std::uint32_t>(&b[kOffCrc], crc32c(std::span(b).first(kOffCrc)));
  return b;
}

Result<RegionHeader> decode_region_header(std::span<const std::byte> bytes) {
  constexpr ssd_detail::SealedHeaderLayout kLayout{"region header",   "region never written (zero header)",
                                                  kRegionHeaderBytes, kRegionMagic, kOffMagic, kOffVersion,
                                                  kOffCrc};
  if (auto ok = ssd_detail::check_sealed_header(bytes, kLayout); !ok) return tl::unexpected(ok.error());
  const std::byte* p = bytes.data();
  RegionHeader h;
  h.version = load_le<std::uint16_t>(p + kOffVersion);
  h.flags = load_le<std::uint16_t>(p + kOffFlags);
  h.region_index = load_le<std::uint32_t>(p + kOffIndex);
  h.region_bytes = load_le<std::uint32_t>(p + kOffRegionBytes);
  h.generation = load_le<std::uint64_t>(p + kOffGeneration);
  h.used_bytes = load_le<std::uint32_t>(p + kOffUsed);
  h.entry_count = load_le<std::uint32_t>(p + kOffCount);
  if ((h.flags & ~kRegionKnownFlags) != 0) return fail(EBADMSG, "region header: unknown flags");
  if (!all_zero(p + kOffReserved, kOffCrc - kOffReserved)) return fail(EBADMSG, "region header: reserved bytes set");
  if (!validate_region_bytes(h.region_bytes)) return fail(EBADMSG, "region header: bad region size");
  if (h.used_bytes < kSsdBlockBytes || h.used_bytes > h.region_bytes || h.used_bytes % kSsdBlockBytes != 0) {
    return fail(EBADMSG, "region header: used bytes " + std::to_string(h.used_bytes) + " out of range or misaligned");
  }
  if (h.generation == 0) return fail(EBADMSG, "region header: generation 0");
  // Every entry takes at least one block.
  if (h.entry_count > (h.used_bytes - kSsdBlockBytes) / kSsdBlockBytes) {
    return fail(EBADMSG, "region header: entry count exceeds used space");
  }
  return h;
}

}  // namespace cxlpool::kvcache
