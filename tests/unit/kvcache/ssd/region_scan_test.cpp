// SPDX-License-Identifier: Apache-2.0
// The recovery scan over region images as the device would hold them after
// clean shutdowns, crashes mid-write, region reuse and random corruption.
#include "cxlpool/kvcache/ssd_region_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "payload_pattern.hpp"
#include "cxlpool/kvcache/ssd_region_writer.hpp"

namespace cxlpool::kvcache {
namespace {

constexpr std::uint32_t kRegion = 128 * 1024;
const NamespaceFingerprint kNs{0x1234, 0x5678};

ScanOptions options(std::uint32_t index) {
  ScanOptions o;
  o.region_bytes = kRegion;
  o.region_index = index;
  return o;
}

// A device-sized image of region `index`: what a per-region write leaves.
struct Image {
  std::vector<std::byte> bytes = std::vector<std::byte>(kRegion, std::byte{0});
  std::vector<AppendResult> appended;
};

// Payload sizes chosen to exercise padding: exact blocks, one byte over, tiny.
const std::vector<std::size_t> kSizes = {5000, 4096, 1, 12288, 0, 7000};

Image build(RegionWriter& w, std::uint32_t index, std::uint64_t generation, bool seal) {
  Image img;
  w.open(index, generation);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    auto r = w.append({generation, i}, kNs, generation * 100 + i, pattern(kSizes[i], static_cast<unsigned>(i)));
    EXPECT_EQ(r.status, AppendStatus::kOk);
    img.appended.push_back(r);
  }
  const auto used = seal ? w.seal() : w.bytes(0, w.used_bytes());
  std::copy(used.begin(), used.end(), img.bytes.begin());
  return img;
}

RegionWriter make_writer() { return std::move(*RegionWriter::create(kRegion)); }

void expect_entries_match(const RegionScan& scan, std::size_t n, std::uint64_t generation) {
  ASSERT_EQ(scan.entries.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& e = scan.entries[i];
    EXPECT_EQ(e.header.key, (ChunkKey{generation, i}));
    EXPECT_EQ(e.header.ns, kNs);
    EXPECT_EQ(e.header.sequence, generation * 100 + i);
    EXPECT_EQ(e.header.payload_bytes, kSizes[i]);
    EXPECT_EQ(e.payload_offset % kSsdBlockBytes, 0u);
  }
}

TEST(RegionScan, SealedRegionRoundTrip) {
  auto w = make_writer();
  const Image img = build(w, 2, 9, true);
  auto scan = scan_region(img.bytes, options(2));
  ASSERT_TRUE(scan) << scan.error().message;
  EXPECT_EQ(scan->stop, ScanStop::kSealedEnd);
  EXPECT_TRUE(scan->clean);
  EXPECT_TRUE(scan->dropped.empty());
  EXPECT_EQ(scan->stop_offset, scan->region.used_bytes);
  expect_entries_match(*scan, kSizes.size(), 9);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    EXPECT_EQ(scan->entries[i].offset, img.appended[i].offset);
    EXPECT_EQ(scan->entries[i].extent, img.appended[i].extent);
  }
  // A sealed region can be scanned from exactly its used bytes.
  auto short_scan = scan_region(std::span(img.bytes).first(scan->region.used_bytes), options(2));
  ASSERT_TRUE(short_scan);
  EXPECT_EQ(short_scan->entries.size(), kSizes.size());
  EXPECT_TRUE(short_scan->clean);
}

TEST(RegionScan, OpenRegionStopsAtUnwrittenSpace) {
  auto w = make_writer();
  const Image img = build(w, 0, 3, false);
  auto scan = scan_region(img.bytes, options(0));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kUnwritten);
  EXPECT_TRUE(scan->clean);
  EXPECT_EQ(scan->stop_offset, w.used_bytes());
  expect_entries_match(*scan, kSizes.size(), 3);
}

TEST(RegionScan, OpenRegionFilledToTheEnd) {
  auto w = make_writer();
  w.open(0, 1);
  ASSERT_EQ(w.append({1, 1}, kNs, 1, pattern(max_payload_bytes(kRegion), 1)).status, AppendStatus::kOk);
  auto scan = scan_region(w.bytes(0, kRegion), options(0));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kRegionEnd);
  EXPECT_TRUE(scan->clean);
  EXPECT_EQ(scan->entries.size(), 1u);
}

TEST(RegionScan, ReusedRegionIgnoresEntriesOfTheOldGeneration) {
  auto w = make_writer();
  Image old_img = build(w, 5, 10, true);
  // Generation 11 wrote two entries over the start of the old image, then crashed.
  w.open(5, 11);
  ASSERT_EQ(w.append({11, 0}, kNs, 1100, pattern(kSizes[0], 0)).status, AppendStatus::kOk);
  ASSERT_EQ(w.append({11, 1}, kNs, 1101, pattern(kSizes[1], 1)).status, AppendStatus::kOk);
  const auto fresh = w.bytes(0, w.used_bytes());
  std::copy(fresh.begin(), fresh.end(), old_img.bytes.begin());
  auto scan = scan_region(old_img.bytes, options(5));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->region.generation, 11u);
  EXPECT_EQ(scan->stop, ScanStop::kStale);
  EXPECT_TRUE(scan->clean);
  expect_entries_match(*scan, 2, 11);
}

TEST(RegionScan, TornLastEntryKeepsEveryCompleteEntryBeforeIt) {
  auto w = make_writer();
  const Image full = build(w, 1, 4, false);
  const std::size_t last = kSizes.size() - 1;
  const std::uint32_t last_off = full.appended[last].offset;
  const std::uint32_t payload_end = full.appended[last].payload_offset + static_cast<std::uint32_t>(kSizes[last]);
  // Crash after every 512-byte sector of the last entry's write that leaves
  // its payload incomplete (a cut in the padding loses nothing).
  for (std::uint32_t cut = last_off; cut < payload_end; cut += 512) {
    Image img = full;
    std::fill(img.bytes.begin() + cut, img.bytes.end(), std::byte{0});
    auto scan = scan_region(img.bytes, options(1));
    ASSERT_TRUE(scan) << cut;
    // Before the header sector lands, the space reads as unwritten; after it,
    // the header is valid but the payload is short: the entry is dropped.
    ASSERT_EQ(scan->entries.size(), last) << "cut at " << cut;
    expect_entries_match(*scan, last, 4);
    if (cut - last_off >= 512) {
      ASSERT_EQ(scan->dropped.size(), 1u) << cut;
      EXPECT_EQ(scan->dropped[0].header.key, (ChunkKey{4, last}));
    } else {
      EXPECT_TRUE(scan->dropped.empty());
      EXPECT_EQ(scan->stop, ScanStop::kUnwritten);
    }
  }
  // A header sector torn in the middle (old bytes behind it): a CRC mismatch, not an entry.
  Image img = full;
  std::fill(img.bytes.begin() + last_off + 40, img.bytes.begin() + last_off + 512, std::byte{0x5A});
  auto scan = scan_region(img.bytes, options(1));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kBadHeader);
  EXPECT_FALSE(scan->clean);
  EXPECT_EQ(scan->stop_offset, last_off);
  expect_entries_match(*scan, last, 4);
}

TEST(RegionScan, PayloadCrcMismatchIsDroppedAndScanContinues) {
  auto w = make_writer();
  Image img = build(w, 0, 6, true);
  img.bytes[img.appended[2].payload_offset] ^= std::byte{0x01};
  auto scan = scan_region(img.bytes, options(0));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kSealedEnd);
  EXPECT_TRUE(scan->clean);
  ASSERT_EQ(scan->dropped.size(), 1u);
  EXPECT_EQ(scan->dropped[0].header.key, (ChunkKey{6, 2}));
  EXPECT_EQ(scan->entries.size(), kSizes.size() - 1);
  for (const auto& e : scan->entries) EXPECT_NE(e.header.key, (ChunkKey{6, 2}));
  // Without payload verification the header walk finds it; a read then fails verify_entry.
  ScanOptions o = options(0);
  o.verify_payloads = false;
  auto headers_only = scan_region(img.bytes, o);
  ASSERT_TRUE(headers_only);
  ASSERT_EQ(headers_only->entries.size(), kSizes.size());
  const auto& e = headers_only->entries[2];
  EXPECT_FALSE(verify_entry(e.header, std::span(img.bytes).subspan(e.payload_offset, e.header.payload_bytes)));
}

TEST(RegionScan, RegionHeaderRejections) {
  auto w = make_writer();
  Image img = build(w, 3, 2, true);
  auto expect_code = [](std::span<const std::byte> b, const ScanOptions& o, int code) {
    auto r = scan_region(b, o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code) << r.error().message;
  };
  expect_code(img.bytes, options(4), EBADMSG);  // read from another index
  ScanOptions other = options(3);
  other.region_bytes = 2 * kRegion;
  expect_code(img.bytes, other, EBADMSG);  // formatted with another region size
  other.region_bytes = kRegion + 1;
  expect_code(img.bytes, other, EINVAL);
  expect_code(std::span(img.bytes).first(10), options(3), EBADMSG);
  std::vector<std::byte> blank(kRegion, std::byte{0});
  expect_code(blank, options(3), ENODATA);
  img.bytes[30] ^= std::byte{0x80};
  expect_code(img.bytes, options(3), EBADMSG);
}

TEST(RegionScan, EntryLengthPastTheRegionEnd) {
  auto w = make_writer();
  w.open(0, 1);
  // An entry of the largest payload a 2x larger region could hold, written by hand.
  EntryHeader h;
  h.key = {1, 1};
  h.region_generation = 1;
  h.payload_bytes = kRegion;
  std::vector<std::byte> img(kRegion, std::byte{0});
  const auto hb = w.header_block();
  std::copy(hb.begin(), hb.end(), img.begin());
  const auto eh = encode_entry_header(h);
  std::copy(eh.begin(), eh.end(), img.begin() + kSsdBlockBytes);
  auto scan = scan_region(img, options(0));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kPastEnd);
  EXPECT_FALSE(scan->clean);
  EXPECT_TRUE(scan->entries.empty());
  // In a sealed region the limit is used_bytes, not the region end.
  auto w2 = make_writer();
  Image sealed = build(w2, 0, 1, true);
  RegionHeader rh = *decode_region_header(sealed.bytes);
  rh.used_bytes = sealed.appended[1].offset + kSsdBlockBytes;  // cuts entry 1 short
  rh.entry_count = 1;
  const auto raw = encode_region_header(rh);
  std::copy(raw.begin(), raw.end(), sealed.bytes.begin());
  auto cut = scan_region(sealed.bytes, options(0));
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->stop, ScanStop::kPastEnd);
  EXPECT_EQ(cut->entries.size(), 1u);
}

TEST(RegionScan, SealedCountMismatchAndTruncatedBytes) {
  auto w = make_writer();
  Image img = build(w, 0, 8, true);
  RegionHeader rh = *decode_region_header(img.bytes);
  rh.entry_count = static_cast<std::uint32_t>(kSizes.size() - 1);
  const auto raw = encode_region_header(rh);
  std::vector<std::byte> bad = img.bytes;
  std::copy(raw.begin(), raw.end(), bad.begin());
  auto scan = scan_region(bad, options(0));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kCountMismatch);
  EXPECT_FALSE(scan->clean);
  // Fewer bytes than the region claims: stops without reading past them.
  const std::uint32_t mid = img.appended[3].payload_offset + 100;
  std::vector<std::byte> part(img.bytes.begin(), img.bytes.begin() + mid);
  auto partial = scan_region(part, options(0));
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial->stop, ScanStop::kTruncated);
  EXPECT_EQ(partial->entries.size(), 3u);
  EXPECT_FALSE(partial->clean);
}

TEST(RegionScan, GarbageAfterEntriesIsBadMagic) {
  auto w = make_writer();
  Image img = build(w, 0, 8, false);
  std::fill(img.bytes.begin() + w.used_bytes(), img.bytes.begin() + w.used_bytes() + 64, std::byte{0xEE});
  auto scan = scan_region(img.bytes, options(0));
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->stop, ScanStop::kBadMagic);
  EXPECT_EQ(scan->entries.size(), kSizes.size());
}

// Random bit flips anywhere: never a crash, never an entry whose header or
// payload CRC does not hold, never an entry outside the bytes.
TEST(RegionScan, RandomBitFlipsNeverYieldABadEntry) {
  auto w = make_writer();
  const Image sealed = build(w, 0, 21, true);
  const Image open = build(w, 0, 22, false);
  std::mt19937_64 rng(12345);
  int served = 0;
  int corrupt_seen = 0;
  for (int round = 0; round < 3000; ++round) {
    Image img = (round % 2) ? sealed : open;
    const int flips = 1 + static_cast<int>(rng() % 8);
    const std::uint32_t span = (round % 3 == 0) ? 4 * kSsdBlockBytes : kRegion;  // bias to headers
    for (int f = 0; f < flips; ++f) {
      const std::size_t bit = rng() % (std::size_t{span} * 8);
      img.bytes[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    }
    auto scan = scan_region(img.bytes, options(0));
    if (!scan) {
      EXPECT_TRUE(scan.error().code == EBADMSG || scan.error().code == ENOTSUP) << scan.error().message;
      ++corrupt_seen;
      continue;
    }
    if (!scan->dropped.empty() || !scan->clean) ++corrupt_seen;
    std::uint64_t prev_end = kSsdBlockBytes;
    for (const auto& e : scan->entries) {
      ASSERT_GE(e.offset, prev_end);
      ASSERT_LE(std::uint64_t{e.payload_offset} + e.header.payload_bytes, img.bytes.size());
      const auto hb = std::span(img.bytes).subspan(e.offset, kEntryHeaderBytes);
      ASSERT_EQ(decode_entry_header(hb).value_or(EntryHeader{}), e.header);
      ASSERT_EQ(e.header.region_generation, scan->region.generation);
      ASSERT_TRUE(verify_entry(e.header, std::span(img.bytes).subspan(e.payload_offset, e.header.payload_bytes)));
      prev_end = e.offset + e.extent;
      ++served;
    }
  }
  EXPECT_GT(served, 0);
  EXPECT_GT(corrupt_seen, 0);
}

}  // namespace
}  // namespace cxlpool::kvcache
