// SPDX-License-Identifier: Apache-2.0
#pragma once
// Walks the entries of one region image, as the start-up index rebuild reads
// it from the device. It never reads outside the given bytes, stops at the
// first entry it cannot trust (its successors cannot be located), and keeps
// entries whose payload fails its CRC apart as dropped: they must not be
// indexed. The recovery rule this implements is in docs/kvstore-format.md.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/ssd_format.hpp"

namespace cxlpool::kvcache {

enum class ScanStop {
  kSealedEnd,      // sealed region: reached used_bytes with entry_count entries
  kRegionEnd,      // open region: entries fill it to the last byte
  kUnwritten,      // open region: a zero header block (nothing written there yet)
  kStale,          // open region: an entry of an earlier generation of this region
  kBadMagic,       // not an entry header: garbage, or a torn header block
  kBadVersion,     // an entry of a format version this reader does not know
  kBadHeader,      // entry header CRC mismatch or invalid field (detail says which)
  kPastEnd,        // the entry's extent runs past the region's end (or used_bytes)
  kTruncated,      // the bytes given end before the region does
  kCountMismatch,  // sealed region: entry count differs from its header
};

// Stops that mean "end of what was written" rather than damage. For a sealed
// region only kSealedEnd is; kUnwritten / kStale / kRegionEnd are clean only
// for an open (unsealed) region, which is checked by RegionScan::clean.
[[nodiscard]] const char* scan_stop_name(ScanStop stop);

struct ScanOptions {
  std::uint32_t region_bytes = kDefaultRegionBytes;  // the configured geometry
  std::uint32_t region_index = 0;                    // where the bytes were read from
  // Check payload CRCs (the bytes must then hold the payloads). Without it only
  // header blocks are needed to get past an entry, and the CRC is checked on
  // every read by verify_entry instead.
  bool verify_payloads = true;
};

struct ScannedEntry {
  EntryHeader header;
  std::uint32_t offset = 0;          // of the header block, from the region start
  std::uint32_t payload_offset = 0;  // offset + 4096
  std::uint32_t extent = 0;          // entry_extent(header.payload_bytes)
};

struct RegionScan {
  RegionHeader region;
  std::vector<ScannedEntry> entries;  // in region order; index these
  std::vector<ScannedEntry> dropped;  // valid header, payload CRC mismatch: never serve
  std::uint32_t stop_offset = 0;      // where the walk ended (the next write position if clean)
  ScanStop stop = ScanStop::kSealedEnd;
  std::string stop_detail;            // why, for damaged stops; empty otherwise
  bool clean = false;                 // stop is an end of data, not damage
};

// Errors (the region holds nothing to index; the store treats it as free):
//   ENODATA  the region header is all zero: never written
//   ENOTSUP  the region header is of an unknown format version
//   EBADMSG  the region header is corrupt, or was written with another region
//            size or at another index than options say
//   EINVAL   options.region_bytes is not a valid region size
[[nodiscard]] Result<RegionScan> scan_region(std::span<const std::byte> bytes, const ScanOptions& options);

}  // namespace cxlpool::kvcache
