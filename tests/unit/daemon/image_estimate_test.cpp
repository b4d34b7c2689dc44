// SPDX-License-Identifier: Apache-2.0
// The size a checkpoint image will at least have, from smaps_rollup: its
// parser, each malformed line, and a live process that grows.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "ckpt/image_estimate.hpp"

namespace cxlpool::daemon {
namespace {

constexpr const char* kRollup =
    "56347c278000-7ffca1624000 ---p 00000000 00:00 0                          [rollup]\n"
    "Rss:                1748 kB\nPss_Anon:            112 kB\nPrivate_Dirty:       112 kB\n"
    "Anonymous:           112 kB\nKSM:                   0 kB\nSwap:                  8 kB\n"
    "SwapPss:               8 kB\n";

TEST(ImageEstimate, AnonymousAndSwapPlusTheHeader) {
  auto bytes = image_estimate_from_smaps_rollup(kRollup);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(*bytes, 4096u + 112u * 1024 + 8u * 1024);
}

TEST(ImageEstimate, MissingOrMalformedLinesAreErrors) {
  EXPECT_FALSE(image_estimate_from_smaps_rollup(""));
  // Pss_Anon and SwapPss are not Anonymous and Swap.
  EXPECT_FALSE(image_estimate_from_smaps_rollup("Pss_Anon:   4 kB\nSwap:   0 kB\n"));
  EXPECT_FALSE(image_estimate_from_smaps_rollup("Anonymous:   4 kB\nSwapPss:   0 kB\n"));
  for (const char* bad : {"Anonymous:   x kB\nSwap: 0 kB\n", "Anonymous:   4 MB\nSwap: 0 kB\n",
                          "Anonymous:\nSwap: 0 kB\n", "Anonymous:   99999999999999999999 kB\nSwap: 0 kB\n"}) {
    auto r = image_estimate_from_smaps_rollup(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, EINVAL);
  }
}

TEST(ImageEstimate, GrowsWithWhatAProcessWrites) {
  auto before = image_estimate(::getpid());
  ASSERT_TRUE(before) << before.error().message;
  constexpr size_t kBytes = 16 << 20;
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, kBytes);
  auto after = image_estimate(::getpid());
  ::munmap(p, kBytes);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_GE(*after, *before + kBytes - (1 << 20));
  EXPECT_EQ(image_estimate(0x7ffffff0).error().code, ESRCH);
}

}  // namespace
}  // namespace cxlpool::daemon
