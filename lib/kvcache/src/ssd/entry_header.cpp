// SPDX-License-Identifier: Apache-2.0
// Entry header: 80 bytes at the start of an entry's 4 KiB header block
// (layout in docs/kvstore-format.md), and the payload check for reads.
#include <cerrno>
#include <string>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/kvcache/ssd_format.hpp"
#include "sealed_header.hpp"

namespace cxlpool::kvcache {

namespace {

using ssd_detail::LeField;

// After magic, version and flags; 12 reserved bytes follow, then the CRC.
using EntryFields = ssd_detail::HeaderFields<LeField<&EntryHeader::key, 8>,  // hi, then lo
                                             LeField<&EntryHeader::ns, 24>,  // hi, then lo
                                             LeField<&EntryHeader::sequence, 40>,
                                             LeField<&EntryHeader::region_generation, 48>,
                                             LeField<&EntryHeader::payload_bytes, 56>,
                                             LeField<&EntryHeader::payload_crc, 60>>;

constexpr ssd_detail::SealedHeaderLayout kLayout{"entry header", "no entry (zero header)", kEntryHeaderBytes,
                                                 kEntryMagic, kEntryKnownFlags, 64};

// EBADMSG: a tombstone with a payload, a payload no region holds, region
// generation 0.
Result<void> check_fields(const EntryHeader& h) {
  if (h.tombstone() && h.payload_bytes != 0) return fail(EBADMSG, "entry header: tombstone with a payload");
  if (h.payload_bytes > max_payload_bytes(kMaxRegionBytes)) {
    return fail(EBADMSG, "entry header: payload of " + std::to_string(h.payload_bytes) + " bytes fits no region");
  }
  if (h.region_generation == 0) return fail(EBADMSG, "entry header: region generation 0");
  return {};
}

}  // namespace

std::array<std::byte, kEntryHeaderBytes> encode_entry_header(const EntryHeader& h) {
  return ssd_detail::encode_sealed<EntryFields, kEntryHeaderBytes>(h, kLayout);
}

Result<EntryHeader> decode_entry_header(std::span<const std::byte> bytes) {
  return ssd_detail::decode_sealed<EntryFields>(bytes, kLayout, check_fields);
}

bool verify_entry(const EntryHeader& h, std::span<const std::byte> payload) {
  return payload.size() == h.payload_bytes && crc32c(payload) == h.payload_crc;
}

}  // namespace cxlpool::kvcache
