// SPDX-License-Identifier: Apache-2.0
// Region and entry headers: round trips and every rejection.
#include "cxlpool/kvcache/ssd_format.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "cxlpool/common/crc32c.hpp"

namespace cxlpool::kvcache {
namespace {

RegionHeader sample_region() {
  RegionHeader h;
  h.flags = kRegionSealed;
  h.region_index = 17;
  h.region_bytes = 1u << 20;
  h.generation = 0x0102030405060708ULL;
  h.used_bytes = 9 * kSsdBlockBytes;
  h.entry_count = 3;
  return h;
}

EntryHeader sample_entry() {
  EntryHeader h;
  h.key = {0x1111222233334444ULL, 0x5555666677778888ULL};
  h.ns = {0x99990000AAAA0000ULL, 0xBBBB0000CCCC0000ULL};
  h.sequence = 42;
  h.region_generation = 7;
  h.payload_bytes = 2u << 20;
  h.payload_crc = 0xDEADBEEF;
  return h;
}

std::vector<std::byte> to_vec(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

// Rewrites the CRC of an encoded header after a field was changed on purpose,
// so the decoder's field checks (not its CRC check) are what is tested.
void fix_crc(std::vector<std::byte>& b) {
  const std::size_t at = b.size() - 4;
  const std::uint32_t c = crc32c(std::span(b).first(at));
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>(c >> (8 * i));
}

void poke32(std::vector<std::byte>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>(v >> (8 * i));
}

TEST(RegionHeader, RoundTrip) {
  const RegionHeader h = sample_region();
  const auto raw = encode_region_header(h);
  auto back = decode_region_header(raw);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, h);
  EXPECT_TRUE(back->sealed());
}

TEST(RegionHeader, LittleEndianLayout) {
  const auto raw = encode_region_header(sample_region());
  EXPECT_EQ(raw[0], std::byte{'K'});
  EXPECT_EQ(raw[1], std::byte{'V'});
  EXPECT_EQ(raw[2], std::byte{'R'});
  EXPECT_EQ(raw[3], std::byte{'G'});
  EXPECT_EQ(raw[8], std::byte{17});                     // region_index
  EXPECT_EQ(raw[16], std::byte{0x08});                  // generation, low byte first
  EXPECT_EQ(raw[23], std::byte{0x01});
}

TEST(RegionHeader, ZeroBytesMeanNeverWritten) {
  std::vector<std::byte> zero(kSsdBlockBytes, std::byte{0});
  auto r = decode_region_header(zero);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENODATA);
}

TEST(RegionHeader, Rejections) {
  const auto good = to_vec(encode_region_header(sample_region()));
  auto expect_code = [](std::vector<std::byte> b, int code, const char* what) {
    auto r = decode_region_header(b);
    ASSERT_FALSE(r) << what;
    EXPECT_EQ(r.error().code, code) << what << ": " << r.error().message;
    EXPECT_FALSE(r.error().message.empty());
  };
  expect_code(std::vector<std::byte>(good.begin(), good.begin() + 63), EBADMSG, "truncated");
  auto b = good;
  b[0] = std::byte{'X'};
  expect_code(b, EBADMSG, "bad magic (CRC not fixed)");
  fix_crc(b);
  expect_code(b, EBADMSG, "bad magic");
  b = good;
  b[20] ^= std::byte{0x40};
  expect_code(b, EBADMSG, "CRC mismatch");
  b = good;
  b[4] = std::byte{2};
  expect_code(b, EBADMSG, "version 2 with a stale CRC is corruption");
  fix_crc(b);
  expect_code(b, ENOTSUP, "version 2");
  b = good;
  b[6] = std::byte{0x02};
  fix_crc(b);
  expect_code(b, EBADMSG, "unknown flag");
  b = good;
  b[40] = std::byte{1};
  fix_crc(b);
  expect_code(b, EBADMSG, "reserved byte");
  for (std::uint32_t bad_size : {0u, 4096u, (1u << 20) + 512, (1u << 30) + 4096}) {
    b = good;
    poke32(b, 12, bad_size);
    fix_crc(b);
    expect_code(b, EBADMSG, "region size");
  }
  for (std::uint32_t bad_used : {0u, 100u, kSsdBlockBytes + 512, (1u << 20) + kSsdBlockBytes}) {
    b = good;
    poke32(b, 24, bad_used);
    fix_crc(b);
    expect_code(b, EBADMSG, "used bytes misaligned or past the region");
  }
  b = good;
  poke32(b, 28, 9);  // 8 blocks after the header cannot hold 9 entries
  fix_crc(b);
  expect_code(b, EBADMSG, "entry count");
  b = good;
  for (int i = 16; i < 24; ++i) b[i] = std::byte{0};
  fix_crc(b);
  expect_code(b, EBADMSG, "generation 0");
}

TEST(EntryHeader, RoundTrip) {
  for (const EntryHeader& h : {sample_entry(), [] {
         EntryHeader t = sample_entry();
         t.flags = kEntryTombstone;
         t.payload_bytes = 0;
         t.payload_crc = 0;
         return t;
       }()}) {
    const auto raw = encode_entry_header(h);
    auto back = decode_entry_header(raw);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, h);
  }
}

TEST(EntryHeader, Rejections) {
  const auto good = to_vec(encode_entry_header(sample_entry()));
  auto expect_code = [](std::vector<std::byte> b, int code, const char* what) {
    auto r = decode_entry_header(b);
    ASSERT_FALSE(r) << what;
    EXPECT_EQ(r.error().code, code) << what << ": " << r.error().message;
  };
  expect_code(std::vector<std::byte>(kEntryHeaderBytes, std::byte{0}), ENODATA, "zero");
  expect_code(std::vector<std::byte>(good.begin(), good.begin() + 79), EBADMSG, "truncated");
  auto b = good;
  b[1] ^= std::byte{1};
  fix_crc(b);
  expect_code(b, EBADMSG, "bad magic");
  for (std::size_t at : {8u, 30u, 44u, 56u, 63u, 77u}) {
    b = good;
    b[at] ^= std::byte{0x10};
    expect_code(b, EBADMSG, "header CRC mismatch");
  }
  b = good;
  b[4] = std::byte{9};
  fix_crc(b);
  expect_code(b, ENOTSUP, "version 9");
  b = good;
  b[7] = std::byte{0x80};
  fix_crc(b);
  expect_code(b, EBADMSG, "unknown flag");
  b = good;
  b[70] = std::byte{1};
  fix_crc(b);
  expect_code(b, EBADMSG, "reserved byte");
  b = good;
  b[6] = std::byte{1};  // tombstone, but payload_bytes is 2 MiB
  fix_crc(b);
  expect_code(b, EBADMSG, "tombstone with payload");
  b = good;
  poke32(b, 56, max_payload_bytes(kMaxRegionBytes) + 1);
  fix_crc(b);
  expect_code(b, EBADMSG, "payload fits no region");
  b = good;
  for (int i = 48; i < 56; ++i) b[i] = std::byte{0};
  fix_crc(b);
  expect_code(b, EBADMSG, "region generation 0");
}

TEST(EntryHeader, VerifyEntryChecksLengthAndCrc) {
  std::vector<std::byte> payload(10000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i);
  EntryHeader h = sample_entry();
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  h.payload_crc = crc32c(payload);
  EXPECT_TRUE(verify_entry(h, payload));
  EXPECT_FALSE(verify_entry(h, std::span(payload).first(payload.size() - 1)));
  payload[5000] ^= std::byte{4};
  EXPECT_FALSE(verify_entry(h, payload));
}

TEST(Geometry, ExtentsAndRegionSizes) {
  EXPECT_EQ(entry_extent(0), kSsdBlockBytes);
  EXPECT_EQ(entry_extent(1), 2 * kSsdBlockBytes);
  EXPECT_EQ(entry_extent(2u << 20), (2u << 20) + kSsdBlockBytes);
  EXPECT_EQ(max_payload_bytes(kDefaultRegionBytes), kDefaultRegionBytes - 2 * kSsdBlockBytes);
  EXPECT_TRUE(validate_region_bytes(kDefaultRegionBytes));
  EXPECT_TRUE(validate_region_bytes(kMinRegionBytes));
  EXPECT_TRUE(validate_region_bytes(kMaxRegionBytes));
  EXPECT_FALSE(validate_region_bytes(kMinRegionBytes - kSsdBlockBytes));
  EXPECT_FALSE(validate_region_bytes(kDefaultRegionBytes + 512));
  EXPECT_FALSE(validate_region_bytes(kMaxRegionBytes + kSsdBlockBytes));
}

}  // namespace
}  // namespace cxlpool::kvcache
