// SPDX-License-Identifier: Apache-2.0
// verify=crc32c: the block stamp (the checksum itself is lib/common's,
// tested in tests/unit/common).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "run/verify_block.hpp"

namespace cxlpool::io {
namespace {

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
