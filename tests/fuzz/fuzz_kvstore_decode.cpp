// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the SSD store's region decoder. The input is a region
// image (its header's geometry is used so the walk is reached). Properties:
// no read outside the input (ASan), errors only with documented errno values,
// every entry returned lies inside the input, after the previous one, carries
// the region's generation and passes both CRCs; an entry header that decodes
// re-encodes to the same bytes.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "cxlpool/kvcache/ssd_format.hpp"
#include "cxlpool/kvcache/ssd_region_scan.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_kvstore_decode";

namespace {

using cxlpool::fuzz::violated;
using namespace cxlpool::kvcache;

void check_errno(const cxlpool::Error& e) { cxlpool::fuzz::check_rejection(e, {EBADMSG, ENOTSUP, ENODATA}); }

void check_scan(std::span<const std::byte> bytes, const ScanOptions& options) {
  auto scan = scan_region(bytes, options);
  if (!scan) return check_errno(scan.error());
  const RegionHeader& r = scan->region;
  const std::uint32_t limit = r.sealed() ? r.used_bytes : r.region_bytes;
  if (scan->stop_offset > limit || scan->stop_offset % kSsdBlockBytes != 0) violated("bad stop offset", "");
  if (scan->clean && r.sealed() && scan->stop != ScanStop::kSealedEnd) {
    violated("sealed region ended early but called clean", scan_stop_name(scan->stop));
  }
  std::uint64_t prev_end = kSsdBlockBytes;
  for (const ScannedEntry& e : scan->entries) {
    if (e.offset < prev_end || e.offset % kSsdBlockBytes != 0) violated("entry overlaps or is misaligned", "");
    if (e.payload_offset != e.offset + kSsdBlockBytes) violated("payload not right after its header block", "");
    if (std::uint64_t{e.offset} + e.extent > limit) violated("entry past the region's limit", "");
    if (e.header.region_generation != r.generation) violated("entry of another generation", "");
    auto h = decode_entry_header(bytes.subspan(e.offset, kEntryHeaderBytes));
    if (!h || !(*h == e.header)) violated("returned header does not decode from its bytes", "");
    if (options.verify_payloads) {
      if (std::uint64_t{e.payload_offset} + e.header.payload_bytes > bytes.size()) violated("payload outside input", "");
      if (!verify_entry(e.header, bytes.subspan(e.payload_offset, e.header.payload_bytes))) {
        violated("entry served with a bad payload CRC", "");
      }
    }
    prev_end = std::uint64_t{e.offset} + e.extent;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  auto entry = decode_entry_header(bytes);
  if (entry) {
    const auto again = encode_entry_header(*entry);
    if (std::memcmp(again.data(), data, again.size()) != 0) violated("entry header re-encodes differently", "");
  } else {
    check_errno(entry.error());
  }
  auto region = decode_region_header(bytes);
  if (!region) {
    check_errno(region.error());
    return 0;
  }
  const auto again = encode_region_header(*region);
  if (std::memcmp(again.data(), data, again.size()) != 0) violated("region header re-encodes differently", "");
  ScanOptions options;
  options.region_bytes = region->region_bytes;
  options.region_index = region->region_index;
  check_scan(bytes, options);
  options.verify_payloads = false;
  check_scan(bytes, options);
  return 0;
}
