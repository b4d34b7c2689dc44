// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/ssd_region_scan.hpp"

#include <cerrno>

#include "le_fields.hpp"

namespace cxlpool::kvcache {

const char* scan_stop_name(ScanStop stop) {
  switch (stop) {
    case ScanStop::kSealedEnd: return "sealed-end";
    case ScanStop::kRegionEnd: return "region-end";
    case ScanStop::kUnwritten: return "unwritten";
    case ScanStop::kStale: return "stale";
    case ScanStop::kBadMagic: return "bad-magic";
    case ScanStop::kBadVersion: return "bad-version";
    case ScanStop::kBadHeader: return "bad-header";
    case ScanStop::kPastEnd: return "past-end";
    case ScanStop::kTruncated: return "truncated";
    case ScanStop::kCountMismatch: return "count-mismatch";
  }
  return "unknown";
}

namespace {

bool is_clean(const RegionHeader& region, ScanStop stop) {
  if (region.sealed()) return stop == ScanStop::kSealedEnd;
  return stop == ScanStop::kRegionEnd || stop == ScanStop::kUnwritten || stop == ScanStop::kStale;
}

// Walks entries from the first one to `limit`; fills out.stop and friends.
void walk(std::span<const std::byte> bytes, std::uint32_t limit, const ScanOptions& options, RegionScan& out) {
  std::uint64_t off = kSsdBlockBytes;
  auto stop = [&](ScanStop why, std::string detail = {}) {
    out.stop = why;
    out.stop_detail = std::move(detail);
    out.stop_offset = static_cast<std::uint32_t>(off);
  };
  for (;;) {
    if (off == limit) return stop(out.region.sealed() ? ScanStop::kSealedEnd : ScanStop::kRegionEnd);
    // off < limit and both are block multiples, so a whole header block is in the region.
    if (off + kSsdBlockBytes > bytes.size()) return stop(ScanStop::kTruncated, "bytes end inside a header block");
    const auto block = bytes.subspan(off, kSsdBlockBytes);
    if (ssd_detail::load_le<std::uint32_t>(block.data()) != kEntryMagic &&
        !ssd_detail::all_zero(block.data(), kEntryHeaderBytes)) {
      return stop(ScanStop::kBadMagic, "no entry magic");
    }
    auto header = decode_entry_header(block);
    if (!header) {
      switch (header.error().code) {
        case ENODATA: return stop(ScanStop::kUnwritten);
        case ENOTSUP: return stop(ScanStop::kBadVersion, header.error().message);
        default: return stop(ScanStop::kBadHeader, header.error().message);
      }
    }
    if (header->region_generation != out.region.generation) {
      return stop(ScanStop::kStale, "entry of generation " + std::to_string(header->region_generation));
    }
    const std::uint64_t extent = entry_extent(header->payload_bytes);
    if (off + extent > limit) return stop(ScanStop::kPastEnd, "entry of " + std::to_string(extent) + " bytes");
    ScannedEntry e;
    e.header = *header;
    e.offset = static_cast<std::uint32_t>(off);
    e.payload_offset = e.offset + kSsdBlockBytes;
    e.extent = static_cast<std::uint32_t>(extent);
    bool good = true;
    if (options.verify_payloads) {
      if (e.payload_offset + std::uint64_t{header->payload_bytes} > bytes.size()) {
        return stop(ScanStop::kTruncated, "bytes end inside a payload");
      }
      good = verify_entry(*header, bytes.subspan(e.payload_offset, header->payload_bytes));
    }
    (good ? out.entries : out.dropped).push_back(e);
    off += extent;
  }
}

}  // namespace

Result<RegionScan> scan_region(std::span<const std::byte> bytes, const ScanOptions& options) {
  if (auto ok = validate_region_bytes(options.region_bytes); !ok) return tl::unexpected(ok.error());
  auto region = decode_region_header(bytes);
  if (!region) return tl::unexpected(region.error());
  if (region->region_bytes != options.region_bytes) {
    return fail(EBADMSG, "region written with region size " + std::to_string(region->region_bytes) +
                             ", configured " + std::to_string(options.region_bytes));
  }
  if (region->region_index != options.region_index) {
    return fail(EBADMSG, "region header says index " + std::to_string(region->region_index) + ", read from " +
                             std::to_string(options.region_index));
  }
  RegionScan out;
  out.region = *region;
  const std::uint32_t limit = region->sealed() ? region->used_bytes : region->region_bytes;
  walk(bytes, limit, options, out);
  if (out.stop == ScanStop::kSealedEnd && out.entries.size() + out.dropped.size() != region->entry_count) {
    out.stop = ScanStop::kCountMismatch;
    out.stop_detail = std::to_string(out.entries.size() + out.dropped.size()) + " entries, header says " +
                      std::to_string(region->entry_count);
  }
  out.clean = is_clean(out.region, out.stop);
  return out;
}

}  // namespace cxlpool::kvcache
