// SPDX-License-Identifier: Apache-2.0
// verify=crc32c: the checksum itself and the block stamp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "run/crc32c.hpp"
#include "run/verify_block.hpp"

namespace cxlpool::io {
namespace {

TEST(Crc32c, KnownValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);  // the standard check value
  EXPECT_EQ(crc32c("", 0), 0u);
  std::vector<unsigned char> zeros(32, 0);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aau);  // RFC 3720 B.4
  // Chaining equals one call over the concatenation.
  const char* text = "hello, world: crc32c chained";
  const std::size_t n = std::strlen(text);
  EXPECT_EQ(crc32c(text + 5, n - 5, crc32c(text, 5)), crc32c(text, n));
}

TEST(VerifyBlock, StampedBlockChecksAndCorruptionIsCaught) {
  std::vector<std::byte> b(4096);
  stamp_verify_block(b.data(), 4096, 8192, 77);
  EXPECT_EQ(check_verify_block(b.data(), 4096, 8192), VerifyOutcome::kOk);
  EXPECT_EQ(check_verify_block(b.data(), 4096, 4096), VerifyOutcome::kWrongOffset);
  b[1000] ^= std::byte{1};
  EXPECT_EQ(check_verify_block(b.data(), 4096, 8192), VerifyOutcome::kBadCrc);
  std::vector<std::byte> zero(4096);
  EXPECT_EQ(check_verify_block(zero.data(), 4096, 0), VerifyOutcome::kNoHeader);
}

TEST(VerifyBlock, DataDependsOnOffsetAndSeed) {
  std::vector<std::byte> a(512), b(512), c(512);
  stamp_verify_block(a.data(), 512, 0, 1);
  stamp_verify_block(b.data(), 512, 512, 1);
  stamp_verify_block(c.data(), 512, 0, 2);
  EXPECT_NE(std::memcmp(a.data() + kVerifyHeaderBytes, b.data() + kVerifyHeaderBytes, 512 - kVerifyHeaderBytes), 0);
  EXPECT_NE(std::memcmp(a.data() + kVerifyHeaderBytes, c.data() + kVerifyHeaderBytes, 512 - kVerifyHeaderBytes), 0);
}

}  // namespace
}  // namespace cxlpool::io
