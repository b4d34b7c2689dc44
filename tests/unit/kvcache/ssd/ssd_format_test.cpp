// SPDX-License-Identifier: Apache-2.0
// Region and entry headers: round trips and every rejection.
#include "cxlpool/kvcache/ssd_format.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
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

// `b` with the little-endian field at `at` set to `v`; the CRC is left stale.
template <typename T>
std::vector<std::byte> with_field(std::vector<std::byte> b, std::size_t at, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) b[at + i] = static_cast<std::byte>(v >> (8 * i));
  return b;
}

// Rewrites the CRC of an encoded header after a field was changed on purpose,
// so the decoder's field checks (not its CRC check) are what is tested.
std::vector<std::byte> resealed(std::vector<std::byte> b) {
  const std::size_t at = b.size() - 4;
  const std::uint32_t crc = crc32c(std::span(b).first(at));
  return with_field(std::move(b), at, crc);
}

// `b` with the byte at `at` XORed with `bits`; the CRC is left stale.
std::vector<std::byte> with_flipped(std::vector<std::byte> b, std::size_t at, std::uint8_t bits) {
  b[at] ^= std::byte{bits};
  return b;
}

// Header bytes a decoder must refuse, with the errno it must say and why.
struct Rejection {
  std::vector<std::byte> bytes;
  int code;
  std::string what;
};

template <typename Decode>
void expect_rejections(Decode decode, const std::vector<Rejection>& cases) {
  for (const Rejection& c : cases) {
    auto r = decode(c.bytes);
    ASSERT_FALSE(r) << c.what;
    EXPECT_EQ(r.error().code, c.code) << c.what << ": " << r.error().message;
    EXPECT_FALSE(r.error().message.empty()) << c.what;
  }
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

// Bytes from hex digits (spaces between fields ignored).
std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> out;
  std::string digits;
  for (char c : hex) {
    if (c != ' ') digits += c;
  }
  for (std::size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<std::byte>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The whole encoding, field by field as docs/kvstore-format.md lays it out,
// then the CRC32C of everything before it: the on-disk bytes never change.
void expect_sealed_bytes(std::span<const std::byte> raw, std::string_view fields_hex) {
  const auto want = from_hex(fields_hex);
  ASSERT_EQ(raw.size(), want.size() + 4);
  EXPECT_EQ(to_vec(raw.first(want.size())), want);
  const std::uint32_t crc = crc32c(raw.first(want.size()));
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(raw[want.size() + i], static_cast<std::byte>(crc >> (8 * i))) << "CRC byte " << i << " (little-endian)";
  }
}

TEST(RegionHeader, EncodesTheDocumentedBytes) {
  expect_sealed_bytes(encode_region_header(sample_region()),
                      "4b565247 0100 0100 11000000 00001000 0807060504030201 00900000 03000000"
                      "00000000000000000000000000000000000000000000000000000000");
}

TEST(EntryHeader, EncodesTheDocumentedBytes) {
  expect_sealed_bytes(encode_entry_header(sample_entry()),
                      "4b56454e 0100 0000 4444333322221111 8888777766665555 0000aaaa00009999 0000cccc0000bbbb"
                      "2a00000000000000 0700000000000000 00002000 efbeadde 000000000000000000000000");
}

TEST(RegionHeader, ZeroBytesMeanNeverWritten) {
  std::vector<std::byte> zero(kSsdBlockBytes, std::byte{0});
  auto r = decode_region_header(zero);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENODATA);
}

TEST(RegionHeader, Rejections) {
  const auto good = to_vec(encode_region_header(sample_region()));
  std::vector<Rejection> cases = {
      {{good.begin(), good.begin() + 63}, EBADMSG, "truncated"},
      {with_field<std::uint8_t>(good, 0, 'X'), EBADMSG, "bad magic (CRC not fixed)"},
      {resealed(with_field<std::uint8_t>(good, 0, 'X')), EBADMSG, "bad magic"},
      {with_flipped(good, 20, 0x40), EBADMSG, "CRC mismatch"},
      {with_field<std::uint8_t>(good, 4, 2), EBADMSG, "version 2 with a stale CRC is corruption"},
      {resealed(with_field<std::uint8_t>(good, 4, 2)), ENOTSUP, "version 2"},
      {resealed(with_field<std::uint8_t>(good, 6, 0x02)), EBADMSG, "unknown flag"},
      {resealed(with_field<std::uint8_t>(good, 40, 1)), EBADMSG, "reserved byte"},
      // 8 blocks after the header cannot hold 9 entries.
      {resealed(with_field<std::uint32_t>(good, 28, 9)), EBADMSG, "entry count"},
      {resealed(with_field<std::uint64_t>(good, 16, 0)), EBADMSG, "generation 0"},
  };
  for (std::uint32_t bad_size : {0u, 4096u, (1u << 20) + 512, (1u << 30) + 4096}) {
    cases.push_back({resealed(with_field(good, 12, bad_size)), EBADMSG, "region size " + std::to_string(bad_size)});
  }
  for (std::uint32_t bad_used : {0u, 100u, kSsdBlockBytes + 512, (1u << 20) + kSsdBlockBytes}) {
    cases.push_back({resealed(with_field(good, 24, bad_used)), EBADMSG,
                     "used bytes " + std::to_string(bad_used) + " misaligned or past the region"});
  }
  expect_rejections(decode_region_header, cases);
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
  std::vector<Rejection> cases = {
      {std::vector<std::byte>(kEntryHeaderBytes, std::byte{0}), ENODATA, "zero"},
      {{good.begin(), good.begin() + 79}, EBADMSG, "truncated"},
      {resealed(with_flipped(good, 1, 1)), EBADMSG, "bad magic"},
      {resealed(with_field<std::uint8_t>(good, 4, 9)), ENOTSUP, "version 9"},
      {resealed(with_field<std::uint8_t>(good, 7, 0x80)), EBADMSG, "unknown flag"},
      {resealed(with_field<std::uint8_t>(good, 70, 1)), EBADMSG, "reserved byte"},
      // A tombstone, but payload_bytes is 2 MiB.
      {resealed(with_field<std::uint8_t>(good, 6, 1)), EBADMSG, "tombstone with payload"},
      {resealed(with_field<std::uint32_t>(good, 56, max_payload_bytes(kMaxRegionBytes) + 1)), EBADMSG,
       "payload fits no region"},
      {resealed(with_field<std::uint64_t>(good, 48, 0)), EBADMSG, "region generation 0"},
  };
  for (std::size_t at : {8u, 30u, 44u, 56u, 63u, 77u}) {
    cases.push_back({with_flipped(good, at, 0x10), EBADMSG, "header CRC mismatch at byte " + std::to_string(at)});
  }
  expect_rejections(decode_entry_header, cases);
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
