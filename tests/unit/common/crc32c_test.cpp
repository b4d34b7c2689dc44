// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/crc32c.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace cxlpool {
namespace {

std::span<const std::byte> bytes_of(const char* s) { return std::as_bytes(std::span(s, std::strlen(s))); }

// Bit-at-a-time reference of the reflected Castagnoli CRC, for comparison.
std::uint32_t reference_crc32c(std::span<const std::byte> data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : data) {
    crc ^= std::to_integer<std::uint32_t>(b);
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
  }
  return ~crc;
}

TEST(Crc32c, StandardCheckValue) { EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u); }

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c({}), 0u);
  // RFC 3720 B.4: 32 bytes of zeros, of 0xFF, incrementing and decrementing.
  std::vector<std::byte> zeros(32, std::byte{0});
  std::vector<std::byte> ones(32, std::byte{0xFF});
  std::vector<std::byte> up(32);
  std::vector<std::byte> down(32);
  for (std::size_t i = 0; i < 32; ++i) {
    up[i] = static_cast<std::byte>(i);
    down[i] = static_cast<std::byte>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
}

TEST(Crc32c, Rfc3720ScsiReadCommandPdu) {
  // RFC 3720 B.4: the 48-byte iSCSI SCSI Read (10) command PDU.
  const std::uint8_t pdu[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                                0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                                0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(crc32c(std::as_bytes(std::span(pdu))), 0xD9963A56u);
}

TEST(Crc32c, MatchesBitwiseReferenceOnRandomLengths) {
  std::mt19937_64 rng(7);
  std::vector<std::byte> buf(70000);
  for (auto& b : buf) b = static_cast<std::byte>(rng());
  for (std::size_t len : {1u, 3u, 7u, 8u, 15u, 16u, 63u, 64u, 255u, 256u, 1023u, 4096u, 65536u, 70000u}) {
    for (std::size_t off : {0u, 1u, 5u}) {
      if (off + len > buf.size()) continue;
      const auto s = std::span(buf).subspan(off, len);
      EXPECT_EQ(crc32c(s), reference_crc32c(s)) << "len " << len << " off " << off;
    }
  }
}

TEST(Crc32c, SeedContinuesAChecksum) {
  const auto all = bytes_of("The quick brown fox jumps over the lazy dog");
  for (std::size_t cut = 0; cut <= all.size(); ++cut) {
    EXPECT_EQ(crc32c(all.subspan(cut), crc32c(all.first(cut))), crc32c(all)) << cut;
  }
}

TEST(Crc32c, CombineGivesTheChecksumOfTheConcatenation) {
  const auto all = bytes_of("The quick brown fox jumps over the lazy dog");
  for (std::size_t cut = 0; cut <= all.size(); ++cut) {
    EXPECT_EQ(crc32c_combine(crc32c(all.first(cut)), crc32c(all.subspan(cut)), all.size() - cut), crc32c(all)) << cut;
  }
}

TEST(Crc32c, CombineJoinsTheQuartersOfAChunk) {
  std::vector<std::byte> chunk(2u << 20);
  std::uint64_t x = 0x9E3779B97F4A7C15u;
  for (auto& b : chunk) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  const std::size_t quarter = chunk.size() / 4;
  std::uint32_t joined = crc32c(std::span(chunk).first(quarter));
  for (std::size_t i = 1; i < 4; ++i) {
    joined = crc32c_combine(joined, crc32c(std::span(chunk).subspan(i * quarter, quarter)), quarter);
  }
  EXPECT_EQ(joined, crc32c(chunk));
  // An empty second part changes nothing.
  EXPECT_EQ(crc32c_combine(joined, crc32c({}), 0), joined);
}

TEST(Crc32c, DetectsEverySingleBitFlip) {
  std::vector<std::byte> buf(512);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::byte>(i * 31 + 7);
  const std::uint32_t good = crc32c(buf);
  for (std::size_t bit = 0; bit < buf.size() * 8; ++bit) {
    buf[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    ASSERT_NE(crc32c(buf), good) << bit;
    buf[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
  }
}

}  // namespace
}  // namespace cxlpool
