// SPDX-License-Identifier: Apache-2.0
// Entry header: 80 bytes at the start of an entry's 4 KiB header block
// (layout in docs/kvstore-format.md), and the payload check for reads.
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
constexpr std::size_t kOffKeyHi = 8;
constexpr std::size_t kOffKeyLo = 16;
constexpr std::size_t kOffNsHi = 24;
constexpr std::size_t kOffNsLo = 32;
constexpr std::size_t kOffSequence = 40;
constexpr std::size_t kOffGeneration = 48;
constexpr std::size_t kOffPayloadBytes = 56;
constexpr std::size_t kOffPayloadCrc = 60;
constexpr std::size_t kOffReserved = 64;  // 12 bytes of zero
constexpr std::size_t kOffCrc = 76;

}  // namespace

std::array<std::byte, kEntryHeaderBytes> encode_entry_header(const EntryHeader& h) {
  std::array<std::byte, kEntryHeaderBytes> b{};
  store_le<std::uint32_t>(&b[kOffMagic], kEntryMagic);
  store_le<std::uint16_t>(&b[kOffVersion], h.version);
  store_le<std::uint16_t>(&b[kOffFlags], h.flags);
  store_le<std::uint64_t>(&b[kOffKeyHi], h.key.hi);
  store_le<std::uint64_t>(&b[kOffKeyLo], h.key.lo);
  store_le<std::uint64_t>(&b[kOffNsHi], h.ns.hi);
  store_le<std::uint64_t>(&b[kOffNsLo], h.ns.lo);
  store_le<std::uint64_t>(&b[kOffSequence], h.sequence);
  store_le<std::uint64_t>(&b[kOffGeneration], h.region_generation);
  store_le<std::uint32_t>(&b[kOffPayloadBytes], h.payload_bytes);
  store_le<std::uint32_t>(&b[kOffPayloadCrc], h.payload_crc);
  store_le<std::uint32_t>(&b[kOffCrc], crc32c(std::span(b).first(kOffCrc)));
  return b;
}

Result<EntryHeader> decode_entry_header(std::span<const std::byte> bytes) {
  constexpr ssd_detail::SealedHeaderLayout kLayout{"entry header", "no entry (zero header)", kEntryHeaderBytes,
                                                  kEntryMagic,    kOffMagic,                kOffVersion,
                                                  kOffCrc};
  if (auto ok = ssd_detail::check_sealed_header(bytes, kLayout); !ok) return tl::unexpected(ok.error());
  const std::byte* p = bytes.data();
  EntryHeader h;
  h.version = load_le<std::uint16_t>(p + kOffVersion);
  h.flags = load_le<std::uint16_t>(p + kOffFlags);
  h.key.hi = load_le<std::uint64_t>(p + kOffKeyHi);
  h.key.lo = load_le<std::uint64_t>(p + kOffKeyLo);
  h.ns.hi = load_le<std::uint64_t>(p + kOffNsHi);
  h.ns.lo = load_le<std::uint64_t>(p + kOffNsLo);
  h.sequence = load_le<std::uint64_t>(p + kOffSequence);
  h.region_generation = load_le<std::uint64_t>(p + kOffGeneration);
  h.payload_bytes = load_le<std::uint32_t>(p + kOffPayloadBytes);
  h.payload_crc = load_le<std::uint32_t>(p + kOffPayloadCrc);
  if ((h.flags & ~kEntryKnownFlags) != 0) return fail(EBADMSG, "entry header: unknown flags");
  if (!all_zero(p + kOffReserved, kOffCrc - kOffReserved)) return fail(EBADMSG, "entry header: reserved bytes set");
  if (h.tombstone() && h.payload_bytes != 0) return fail(EBADMSG, "entry header: tombstone with a payload");
  if (h.payload_bytes > max_payload_bytes(kMaxRegionBytes)) {
    return fail(EBADMSG, "entry header: payload of " + std::to_string(h.payload_bytes) + " bytes fits no region");
  }
  if (h.region_generation == 0) return fail(EBADMSG, "entry header: region generation 0");
  return h;
}

bool verify_entry(const EntryHeader& h, std::span<const std::byte> payload) {
  return payload.size() == h.payload_bytes && crc32c(payload) == h.payload_crc;
}

}  // namespace cxlpool::kvcache
