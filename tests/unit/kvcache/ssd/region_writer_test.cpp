// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/ssd_region_writer.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "payload_pattern.hpp"

namespace cxlpool::kvcache {
namespace {

constexpr std::uint32_t kRegion = 256 * 1024;
const NamespaceFingerprint kNs{0xA, 0xB};

TEST(RegionWriter, RejectsBadRegionSizes) {
  for (std::uint32_t bad : {0u, 4096u, kRegion + 100, kMaxRegionBytes + kSsdBlockBytes}) {
    auto w = RegionWriter::create(bad);
    ASSERT_FALSE(w) << bad;
    EXPECT_EQ(w.error().code, EINVAL);
  }
}

TEST(RegionWriter, BufferAndPayloadsAreBlockAligned) {
  auto w = RegionWriter::create(kRegion);
  ASSERT_TRUE(w);
  w->open(3, 11);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w->header_block().data()) % kSsdBlockBytes, 0u);
  for (std::size_t n : {1u, 4095u, 4096u, 4097u, 10000u}) {
    auto r = w->append({1, n}, kNs, n, pattern(n, 1));
    ASSERT_EQ(r.status, AppendStatus::kOk) << n;
    EXPECT_EQ(r.offset % kSsdBlockBytes, 0u);
    EXPECT_EQ(r.payload_offset, r.offset + kSsdBlockBytes);
    EXPECT_EQ(r.extent, entry_extent(static_cast<std::uint32_t>(n)));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w->bytes(r.payload_offset, 1).data()) % kSsdBlockBytes, 0u);
  }
}

TEST(RegionWriter, AppendLaysOutHeaderPayloadAndZeroPadding) {
  auto w = RegionWriter::create(kRegion);
  ASSERT_TRUE(w);
  w->open(0, 5);
  const auto payload = pattern(5000, 9);
  auto r = w->append({7, 8}, kNs, 99, payload);
  ASSERT_EQ(r.status, AppendStatus::kOk);
  EXPECT_EQ(r.offset, kSsdBlockBytes);  // right after the region header block
  auto h = decode_entry_header(w->bytes(r.offset, kSsdBlockBytes));
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->key, (ChunkKey{7, 8}));
  EXPECT_EQ(h->ns, kNs);
  EXPECT_EQ(h->sequence, 99u);
  EXPECT_EQ(h->region_generation, 5u);
  EXPECT_EQ(h->payload_bytes, 5000u);
  EXPECT_EQ(h->payload_crc, crc32c(payload));
  const auto stored = w->bytes(r.payload_offset, 5000);
  EXPECT_TRUE(std::equal(stored.begin(), stored.end(), payload.begin()));
  EXPECT_TRUE(verify_entry(*h, stored));
  const auto header_rest = w->bytes(r.offset + kEntryHeaderBytes, kSsdBlockBytes - kEntryHeaderBytes);
  for (std::byte b : header_rest) ASSERT_EQ(b, std::byte{0});
  const auto pad = w->bytes(r.payload_offset + 5000, r.extent - kSsdBlockBytes - 5000);
  EXPECT_EQ(pad.size(), 2 * kSsdBlockBytes - 5000);
  for (std::byte b : pad) ASSERT_EQ(b, std::byte{0});
}

// A header-only entry (the payload is written from the caller's memory)
// takes the caller's CRC when it has one, and computes it otherwise.
TEST(RegionWriter, AppendHeaderTakesAKnownCrcOrComputesIt) {
  auto w = RegionWriter::create(kRegion);
  ASSERT_TRUE(w);
  w->open(0, 5);
  const auto payload = pattern(3 * kSsdBlockBytes, 4);
  auto computed = w->append_header({1, 1}, kNs, 1, payload);
  ASSERT_EQ(computed.status, AppendStatus::kOk);
  EXPECT_EQ(computed.payload_crc, crc32c(payload));
  // A stand-in value, not the payload's CRC: proves the store took it
  // rather than reading the payload.
  auto known = w->append_header({2, 2}, kNs, 2, payload, 0x12345678u);
  ASSERT_EQ(known.status, AppendStatus::kOk);
  EXPECT_EQ(known.payload_crc, 0x12345678u);
  auto h = decode_entry_header(w->bytes(known.offset, kSsdBlockBytes));
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->payload_crc, 0x12345678u);
}

TEST(RegionWriter, OpenHeaderThenSealedHeader) {
  auto w = RegionWriter::create(kRegion);
  ASSERT_TRUE(w);
  w->open(4, 12);
  auto open = decode_region_header(w->header_block());
  ASSERT_TRUE(open) << open.error().message;
  EXPECT_FALSE(open->sealed());
  EXPECT_EQ(open->region_index, 4u);
  EXPECT_EQ(open->generation, 12u);
  EXPECT_EQ(open->used_bytes, kSsdBlockBytes);
  ASSERT_EQ(w->append({1, 1}, kNs, 1, pattern(100, 2)).status, AppendStatus::kOk);
  ASSERT_EQ(w->append({1, 2}, kNs, 2, {}, kEntryTombstone).status, AppendStatus::kOk);
  const auto image = w->seal();
  EXPECT_FALSE(w->is_open());
  EXPECT_EQ(image.size(), 4 * kSsdBlockBytes);  // header + (header + 1 payload block) + tombstone
  auto sealed = decode_region_header(image);
  ASSERT_TRUE(sealed);
  EXPECT_TRUE(sealed->sealed());
  EXPECT_EQ(sealed->used_bytes, 4 * kSsdBlockBytes);
  EXPECT_EQ(sealed->entry_count, 2u);
}

TEST(RegionWriter, FullAndTooLarge) {
  auto w = RegionWriter::create(kRegion);
  ASSERT_TRUE(w);
  // Not open: nothing fits.
  EXPECT_EQ(w->append({1, 1}, kNs, 1, pattern(10, 0)).status, AppendStatus::kRegionFull);
  w->open(0, 1);
  EXPECT_EQ(w->append({1, 1}, kNs, 1, pattern(max_payload_bytes(kRegion) + 1, 0)).status,
            AppendStatus::kTooLarge);
  // Exactly the largest payload fills the region to the last byte.
  auto r = w->append({1, 1}, kNs, 1, pattern(max_payload_bytes(kRegion), 0));
  ASSERT_EQ(r.status, AppendStatus::kOk);
  EXPECT_EQ(w->free_bytes(), 0u);
  EXPECT_EQ(w->append({1, 2}, kNs, 2, {}, kEntryTombstone).status, AppendStatus::kRegionFull);
  w->seal();
  // Reuse for the next region: full space again.
  w->open(1, 2);
  EXPECT_EQ(w->used_bytes(), kSsdBlockBytes);
  EXPECT_EQ(w->entry_count(), 0u);
  std::uint32_t appended = 0;
  while (w->append({2, appended}, kNs, appended, pattern(8192, 3)).status == AppendStatus::kOk) ++appended;
  EXPECT_EQ(appended, (kRegion - kSsdBlockBytes) / (3 * kSsdBlockBytes));
  EXPECT_EQ(w->entry_count(), appended);
}

}  // namespace
}  // namespace cxlpool::kvcache
