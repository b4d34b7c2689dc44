// SPDX-License-Identifier: Apache-2.0
// The CPU references define what the GPU kernels must compute; these tests
// pin their semantics down on every machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "kernel_math.hpp"
#include "kv_copy_ref.hpp"
#include "pattern_ref.hpp"
#include "random_data.hpp"

namespace cxlpool::cuda {
namespace {

using test::random_bytes;

TEST(KernelMath, Mix64IsSplitMix64Finaliser) {
  // Known splitmix64 outputs: state 0 advanced once gives 0xE220A8397B1DCDAF.
  EXPECT_EQ(math::mix64(math::kGolden), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(math::mix64(0), 0u);
}

TEST(FillPattern, BytesAreLittleEndianPatternWords) {
  std::vector<std::byte> buf(21);
  ref::fill_pattern(buf, 42);
  for (size_t i = 0; i < buf.size(); ++i) {
    const uint64_t word = math::pattern_word(42, i / 8);
    EXPECT_EQ(static_cast<unsigned>(buf[i]), (word >> (8 * (i % 8))) & 0xFF) << "byte " << i;
  }
}

TEST(FillPattern, PrefixOfLongerFillAndSeedDependent) {
  std::vector<std::byte> a(1000), b(37), c(1000);
  ref::fill_pattern(a, 7);
  ref::fill_pattern(b, 7);
  ref::fill_pattern(c, 8);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
  EXPECT_NE(a, c);
}

TEST(FillPattern, EmptyRangeTouchesNothing) {
  std::vector<std::byte> buf(4, std::byte{0x11});
  ref::fill_pattern(std::span<std::byte>(buf.data(), 0), 1);
  EXPECT_EQ(buf, std::vector<std::byte>(4, std::byte{0x11}));
}

TEST(Checksum, MatchesDefinition) {
  const auto data = random_bytes(45, 3);
  uint64_t expected = math::checksum_length_term(45);
  for (size_t w = 0; w < 6; ++w) {
    uint64_t word = 0;
    for (size_t b = 0; b < 8; ++b) {
      const size_t i = w * 8 + b;
      if (i < data.size()) word |= uint64_t(static_cast<unsigned char>(data[i])) << (8 * b);
    }
    expected += math::checksum_term(word, w);
  }
  EXPECT_EQ(ref::checksum(data), expected);
}

TEST(Checksum, DetectsSingleBitFlipsAnywhere) {
  auto data = random_bytes(1024 + 5, 9);
  const uint64_t base = ref::checksum(data);
  for (size_t i = 0; i < data.size(); i += 97) {
    data[i] ^= std::byte{0x04};
    EXPECT_NE(ref::checksum(data), base) << "flip at " << i;
    data[i] ^= std::byte{0x04};
  }
  EXPECT_EQ(ref::checksum(data), base);
}

TEST(Checksum, DetectsSwappedWordsAndAppendedZeros) {
  auto data = random_bytes(64, 5);
  const uint64_t base = ref::checksum(data);
  auto swapped = data;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(ref::checksum(swapped), base);
  auto longer = data;
  longer.push_back(std::byte{0});
  EXPECT_NE(ref::checksum(longer), base);
  EXPECT_NE(ref::checksum({}), ref::checksum(std::vector<std::byte>(1)));
}

class KvCopyTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(KvCopyTest, GatherCopiesListedPagesInOrderAndSkipsBadIndices) {
  const uint64_t page = GetParam();
  const uint64_t pages = 16;
  const auto arena = random_bytes(pages * page, 11);
  const std::vector<uint32_t> index = {3, 0, 15, 99, 3, 16, 7};
  std::vector<std::byte> dst(index.size() * page, std::byte{0xEE});
  EXPECT_EQ(ref::kv_gather(dst.data(), arena.data(), pages, index, page), 2u);
  for (size_t i = 0; i < index.size(); ++i) {
    const std::byte* got = dst.data() + i * page;
    if (index[i] >= pages) {
      EXPECT_TRUE(std::all_of(got, got + page, [](std::byte b) { return b == std::byte{0xEE}; }))
          << "skipped slot " << i << " was written";
    } else {
      EXPECT_TRUE(std::equal(got, got + page, arena.data() + index[i] * page)) << "slot " << i;
    }
  }
}

TEST_P(KvCopyTest, ScatterWritesListedPagesOnlyAndRoundTrips) {
  const uint64_t page = GetParam();
  const uint64_t pages = 16;
  const auto original = random_bytes(pages * page, 12);
  auto arena = original;
  const std::vector<uint32_t> index = {5, 1, 200, 14};
  const auto src = random_bytes(index.size() * page, 13);
  EXPECT_EQ(ref::kv_scatter(arena.data(), pages, src.data(), index, page), 1u);
  for (uint64_t p = 0; p < pages; ++p) {
    const auto it = std::find(index.begin(), index.end(), p);
    const std::byte* want = it == index.end() ? original.data() + p * page
                                              : src.data() + size_t(it - index.begin()) * page;
    EXPECT_TRUE(std::equal(want, want + page, arena.data() + p * page)) << "page " << p;
  }
  // Gathering the same list returns what was scattered (bad slot aside).
  std::vector<std::byte> back(src.size());
  EXPECT_EQ(ref::kv_gather(back.data(), arena.data(), pages, index, page), 1u);
  for (size_t i : {0u, 1u, 3u}) {
    EXPECT_TRUE(
        std::equal(src.begin() + i * page, src.begin() + (i + 1) * page, back.begin() + i * page));
  }
}

INSTANTIATE_TEST_SUITE_P(PageSizes, KvCopyTest, ::testing::Values(16, 4100, 16384));

TEST(KvCopy, EmptyListAndZeroArena) {
  std::vector<std::byte> arena(64), dst(64);
  EXPECT_EQ(ref::kv_gather(dst.data(), arena.data(), 1, {}, 64), 0u);
  const std::vector<uint32_t> index = {0, 1};
  EXPECT_EQ(ref::kv_gather(dst.data(), arena.data(), 0, index, 32), 2u);
}

}  // namespace
}  // namespace cxlpool::cuda
