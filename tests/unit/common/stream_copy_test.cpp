// SPDX-License-Identifier: Apache-2.0
// stream_copy / stream_copy_crc32c / copy_crc32c: byte-exact copies and the same checksum
// as crc32c() over every size and alignment class (short copies through
// memcpy, long ones streamed, tails, unaligned destinations).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/stream_copy.hpp"

namespace cxlpool {
namespace {

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};

TEST(StreamCopy, CopiesExactlyAndChecksumsLikeCrc32c) {
  constexpr std::size_t kMax = (2u << 20) + 4096;
  std::unique_ptr<std::byte, AlignedFree> src(static_cast<std::byte*>(std::aligned_alloc(4096, kMax)));
  // aligned_alloc wants a size that is a multiple of the alignment.
  std::unique_ptr<std::byte, AlignedFree> dst(static_cast<std::byte*>(std::aligned_alloc(4096, kMax + 4096)));
  for (std::size_t i = 0; i < kMax; ++i) src.get()[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{65535}, std::size_t{65536},
                        std::size_t{65536 + 17}, std::size_t{1u << 20}, std::size_t{(2u << 20) + 100}}) {
    for (std::size_t dst_off : {0, 16, 3}) {
      for (std::size_t src_off : {0, 5}) {
        if (src_off + n > kMax) continue;
        std::byte* d = dst.get() + dst_off;
        const std::byte* s = src.get() + src_off;
        std::memset(dst.get(), 0xEE, kMax + 64);
        stream_copy(d, s, n);
        ASSERT_EQ(std::memcmp(d, s, n), 0) << n << " bytes, dst+" << dst_off << " src+" << src_off;
        EXPECT_EQ(d[n], std::byte{0xEE}) << "wrote past the end";
        if (dst_off != 0) { EXPECT_EQ(d[-1], std::byte{0xEE}) << "wrote before the start"; }
        std::memset(dst.get(), 0xEE, kMax + 64);
        const std::uint32_t crc = stream_copy_crc32c(d, s, n, 0x1234);
        EXPECT_EQ(crc, crc32c({s, n}, 0x1234)) << n << " bytes";
        ASSERT_EQ(std::memcmp(d, s, n), 0) << n << " bytes (fused), dst+" << dst_off;
        EXPECT_EQ(d[n], std::byte{0xEE});
        std::memset(dst.get(), 0xEE, kMax + 64);
        EXPECT_EQ(copy_crc32c(d, s, n), crc32c({s, n})) << n << " bytes";
        ASSERT_EQ(std::memcmp(d, s, n), 0) << n << " bytes (cached), dst+" << dst_off;
        EXPECT_EQ(d[n], std::byte{0xEE});
      }
    }
  }
}

}  // namespace
}  // namespace cxlpool
