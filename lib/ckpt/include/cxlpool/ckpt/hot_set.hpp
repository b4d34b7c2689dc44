// SPDX-License-Identifier: Apache-2.0
// The hybrid policy's hot set, kept beside an image in a file of its own
// (docs/ckpt.md "Hot sets"): the pages a clone needed first, which a hybrid
// restore copies into anonymous memory up front. An image is sealed once
// written, so what restores learn about it goes into this sidecar, tied to
// the image by the manifest's checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

inline constexpr uint32_t kHotSetVersion = 1;
// More pages than this is not a hot set but a hostile file (2^24 pages: 64 GiB).
inline constexpr uint32_t kMaxHotPages = 1u << 24;

enum class HotSource : uint32_t {
  kFaults = 1,   // pages a moa clone faulted in, in fault order (REAP's record)
  kWritten = 2,  // pages a mow clone had written (anonymous in its pagemap)
};

struct HotSet {
  HotSource source = HotSource::kFaults;
  uint32_t manifest_crc32c = 0;  // the image's (ImageHeader::manifest_crc32c)
  std::vector<uint64_t> pages;   // page addresses, unique, in the order recorded
};

// Layout, little-endian: magic "CXLHOT\0\0", u32 version, u32 source,
// u32 manifest CRC-32C, u32 page count, u64 page address each, then a
// CRC-32C of everything before it.
[[nodiscard]] std::vector<std::byte> encode_hot_set(const HotSet& set);
// EBADMSG: truncated, bad magic or checksum, a count that disagrees with
// the length, unaligned or repeated pages, an unknown source; ENOTSUP:
// another version.
[[nodiscard]] Result<HotSet> decode_hot_set(std::span<const std::byte> bytes);

// The recorded pages that are the image's (inside one of the manifest's
// runs), each once, in the order given: what a recorder keeps.
[[nodiscard]] std::vector<uint64_t> pages_in_runs(const Manifest& manifest, std::span<const uint64_t> pages);

// Sets manifest.hot_pages (sorted) from `set`. ESTALE: the set was recorded
// for another image; EINVAL: a page outside the manifest's runs.
Result<void> apply_hot_set(Manifest& manifest, uint32_t manifest_crc32c, const HotSet& set);

Result<HotSet> read_hot_set_file(const std::string& path);
// Written to a temporary name beside `path` and renamed over it.
Result<void> write_hot_set_file(const std::string& path, const HotSet& set);

}  // namespace cxlpool::ckpt
