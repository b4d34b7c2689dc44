// SPDX-License-Identifier: Apache-2.0
// support/faulty_block_device.hpp over every backend: injected errors come
// back as completions with the request's user_data, short reads pass
// through as short, and the wrapper's statistics count them as a real device
// would.
#include <cerrno>
#include <vector>

#include "block_device_conformance.hpp"
#include "support/faulty_block_device.hpp"

namespace cxlpool::blk_test {
namespace {

TEST_P(BlockDeviceConformance, FaultyWrapperSurfacesEioAsCompletions) {
  OPEN_OR_SKIP(inner, options(16 * kAlign));
  testing::FaultyBlockDevice dev(std::move(inner), testing::FaultPlan{.fail_nth_op = 3});
  Buffer b = aligned_buffer(8 * kAlign);
  fill_pattern(b.get(), 8 * kAlign, 9);
  std::vector<IoRequest> writes;
  for (std::uint64_t i = 0; i < 8; ++i) writes.push_back(IoRequest{IoOp::kWrite, i * kAlign, b.get() + i * kAlign, kAlign, 100 + i});
  ASSERT_TRUE(dev.submit(writes));
  int eio = 0;
  for (const IoCompletion& c : drain(dev, 8)) {
    if (c.user_data == 102) {
      EXPECT_EQ(c.result, -EIO);
      ++eio;
    } else {
      EXPECT_EQ(c.result, static_cast<std::int64_t>(kAlign)) << c.user_data;
    }
  }
  EXPECT_EQ(eio, 1);
  EXPECT_EQ(dev.stats().errors, 1u);
  EXPECT_EQ(dev.stats().writes, 7u);
  EXPECT_EQ(dev.injected(), 1u);
  EXPECT_EQ(dev.inner().in_flight(), 0u);
}

TEST_P(BlockDeviceConformance, FaultyWrapperShortReadsAndSyncErrors) {
  OPEN_OR_SKIP(inner, options(16 * kAlign));
  testing::FaultyBlockDevice dev(std::move(inner), testing::FaultPlan{.fail_nth_op = 2, .fail_all_after = true,
                                                                       .short_read_bytes = 512});
  Buffer b = aligned_buffer(kAlign);
  auto first = dev.read(0, b.get(), kAlign);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, 512u) << "short read passed through as is";
  auto second = dev.read(0, b.get(), kAlign);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, EIO);
  EXPECT_EQ(dev.write(0, b.get(), kAlign).error().code, EIO);
  EXPECT_EQ(dev.stats().errors, 2u);
  EXPECT_EQ(dev.stats().short_transfers, 1u);
}

}  // namespace
}  // namespace cxlpool::blk_test
