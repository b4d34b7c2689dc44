// SPDX-License-Identifier: Apache-2.0
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/hal/block_device.hpp"
#include "cxlpool_build_config.h"
#include "support/faulty_block_device.hpp"
#include "posix_block_device.hpp"
#if CXLPOOL_HAVE_URING
#include "uring_block_device.hpp"
#endif

namespace cxlpool {
namespace {

using hal::BlockDevice;
using hal::BlockOpenOptions;
using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

constexpr std::size_t kAlign = 4096;

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::uint8_t[], AlignedFree>;

Buffer aligned_buffer(std::size_t bytes) {
  return Buffer(static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, bytes)));
}

void fill_pattern(std::uint8_t* p, std::size_t bytes, std::uint64_t seed) {
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>((seed * 131 + i * 7 + (i >> 9)) & 0xff);
}

enum class Driver { kPosix, kUring };

std::string driver_name(const ::testing::TestParamInfo<Driver>& info) {
  return info.param == Driver::kPosix ? "posix" : "uring";
}

class BlockDeviceTest : public ::testing::TestWithParam<Driver> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();  // "Case/driver"
    for (char& c : name) if (c == '/') c = '_';
    path_ = std::string(CXLPOOL_BLK_TEST_DIR) + "/blk_" + std::to_string(::getpid()) + "_" + name + ".img";
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  // Opens the test file through the driver under test; sets `skip_` with the
  // reason when this host cannot run the case.
  std::unique_ptr<BlockDevice> open(BlockOpenOptions options) {
    options.create = true;
    Result<std::unique_ptr<BlockDevice>> dev = fail(ENOSYS, "uring backend not compiled");
    if (GetParam() == Driver::kPosix) {
      dev = drivers::open_posix_block_device(path_, options);
    } else {
#if CXLPOOL_HAVE_URING
      dev = drivers::open_uring_block_device(path_, options);
#endif
    }
    if (!dev) {
      const bool refused_uring = GetParam() == Driver::kUring && (dev.error().code == ENOSYS || dev.error().code == EPERM);
      const bool refused_direct = options.direct && dev.error().code == EINVAL;
      if (refused_uring || refused_direct) {
        skip_ = dev.error().message;
        return nullptr;
      }
      ADD_FAILURE() << dev.error().message;
      return nullptr;
    }
    return std::move(*dev);
  }

  // Polls until `count` completions arrived.
  std::vector<IoCompletion> drain(BlockDevice& dev, std::size_t count) {
    std::vector<IoCompletion> all;
    std::vector<IoCompletion> buf(count);
    while (all.size() < count) {
      auto got = dev.poll_completions(buf, 1);
      if (!got) {
        ADD_FAILURE() << got.error().message;
        break;
      }
      all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*got));
    }
    return all;
  }

  std::string path_;
  std::string skip_;
};

#define OPEN_OR_SKIP(var, opts)     \
  auto var = open(opts);            \
  if (!var && !skip_.empty()) {     \
    GTEST_SKIP() << skip_;          \
  }                                 \
  ASSERT_NE(var, nullptr)

TEST_P(BlockDeviceTest, DirectWriteThenReadBackAtQueueDepth32) {
  constexpr std::size_t kBlock = 64 * 1024, kBlocks = 96;
  BlockOpenOptions opts;
  opts.truncate_to = kBlock * kBlocks;
  OPEN_OR_SKIP(dev, opts);
  EXPECT_EQ(dev->size(), kBlock * kBlocks);
  EXPECT_EQ(dev->queue_depth(), 32u);
  EXPECT_GT(dev->offset_alignment(), 1u) << "O_DIRECT needs an alignment";
  EXPECT_EQ(kAlign % dev->mem_alignment(), 0u);

  Buffer src = aligned_buffer(kBlock * kBlocks), dst = aligned_buffer(kBlock * kBlocks);
  for (std::size_t b = 0; b < kBlocks; ++b) fill_pattern(src.get() + b * kBlock, kBlock, b + 1);
  std::memset(dst.get(), 0, kBlock * kBlocks);

  for (IoOp op : {IoOp::kWrite, IoOp::kRead}) {
    std::uint8_t* base = op == IoOp::kWrite ? src.get() : dst.get();
    std::vector<bool> seen(kBlocks, false);
    for (std::size_t first = 0; first < kBlocks; first += 32) {
      std::vector<IoRequest> batch;
      for (std::size_t b = first; b < first + 32; ++b)
        batch.push_back(IoRequest{op, b * kBlock, base + b * kBlock, kBlock, 1000 + b});
      ASSERT_TRUE(dev->submit(batch)) << "batch at " << first;
      EXPECT_EQ(dev->in_flight(), 32u);
      for (const IoCompletion& c : drain(*dev, 32)) {
        ASSERT_GE(c.user_data, 1000u);
        const std::size_t b = c.user_data - 1000;
        ASSERT_LT(b, kBlocks);
        EXPECT_FALSE(seen[b]);
        seen[b] = true;
        EXPECT_EQ(c.op, op);
        EXPECT_EQ(c.result, static_cast<std::int64_t>(kBlock)) << io_op_name(op) << " block " << b;
      }
    }
    EXPECT_EQ(dev->in_flight(), 0u);
    if (op == IoOp::kWrite) {
      ASSERT_TRUE(dev->sync());
    }
  }
  EXPECT_EQ(std::memcmp(src.get(), dst.get(), kBlock * kBlocks), 0);
  EXPECT_EQ(dev->stats().writes, kBlocks);
  EXPECT_EQ(dev->stats().reads, kBlocks);
  EXPECT_EQ(dev->stats().bytes_read, kBlock * kBlocks);
  EXPECT_EQ(dev->stats().bytes_written, kBlock * kBlocks);
  EXPECT_EQ(dev->stats().errors, 0u);
}

// cxlpool-io asks io_uring for cooperative task running (completions post
// when the waiter enters the kernel): waiting inside poll_completions must
// still see every completion, with the right bytes.
TEST_P(BlockDeviceTest, CooperativeTaskRunStillCompletesEveryRequest) {
  constexpr std::size_t kBlock = 4096, kBlocks = 64;
  BlockOpenOptions opts;
  opts.truncate_to = kBlock * kBlocks;
  opts.coop_taskrun = true;
  OPEN_OR_SKIP(dev, opts);
  Buffer src = aligned_buffer(kBlock * kBlocks), dst = aligned_buffer(kBlock * kBlocks);
  for (std::size_t b = 0; b < kBlocks; ++b) fill_pattern(src.get() + b * kBlock, kBlock, b + 7);
  std::memset(dst.get(), 0, kBlock * kBlocks);
  for (IoOp op : {IoOp::kWrite, IoOp::kRead}) {
    std::uint8_t* base = op == IoOp::kWrite ? src.get() : dst.get();
    for (std::size_t first = 0; first < kBlocks; first += 32) {
      std::vector<IoRequest> batch;
      for (std::size_t b = first; b < first + 32; ++b)
        batch.push_back(IoRequest{op, b * kBlock, base + b * kBlock, kBlock, b});
      ASSERT_TRUE(dev->submit(batch));
      for (const IoCompletion& c : drain(*dev, 32)) EXPECT_EQ(c.result, static_cast<std::int64_t>(kBlock));
    }
  }
  EXPECT_EQ(std::memcmp(src.get(), dst.get(), kBlock * kBlocks), 0);
}

TEST_P(BlockDeviceTest, RegisteredBuffers) {
  constexpr std::size_t kBlock = 16 * 1024, kBlocks = 32;
  BlockOpenOptions opts;
  opts.truncate_to = kBlock * kBlocks;
  OPEN_OR_SKIP(dev, opts);
  Buffer out = aligned_buffer(kBlock * kBlocks), in = aligned_buffer(kBlock * kBlocks);
  fill_pattern(out.get(), kBlock * kBlocks, 77);
  std::memset(in.get(), 0, kBlock * kBlocks);
  const iovec bufs[2] = {{out.get(), kBlock * kBlocks}, {in.get(), kBlock * kBlocks}};
  ASSERT_TRUE(dev->register_buffers(bufs));
  EXPECT_EQ(dev->registered_buffer_count(), 2u);

  std::vector<IoRequest> writes, reads;
  for (std::size_t b = 0; b < kBlocks; ++b) {
    writes.push_back(IoRequest{IoOp::kWrite, b * kBlock, out.get() + b * kBlock, kBlock, b, 0});
    reads.push_back(IoRequest{IoOp::kRead, b * kBlock, in.get() + b * kBlock, kBlock, b, 1});
  }
  ASSERT_TRUE(dev->submit(writes));
  for (const IoCompletion& c : drain(*dev, kBlocks)) EXPECT_EQ(c.result, static_cast<std::int64_t>(kBlock));
  ASSERT_TRUE(dev->submit(reads));
  for (const IoCompletion& c : drain(*dev, kBlocks)) EXPECT_EQ(c.result, static_cast<std::int64_t>(kBlock));
  EXPECT_EQ(std::memcmp(out.get(), in.get(), kBlock * kBlocks), 0);

  // A request must lie inside the buffer it names.
  IoRequest outside{IoOp::kRead, 0, out.get(), kBlock, 0, 1};
  auto rejected = dev->submit(std::span<const IoRequest>(&outside, 1));
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, EINVAL);
}

TEST_P(BlockDeviceTest, FsyncAndFdatasyncComplete) {
  BlockOpenOptions opts;
  opts.truncate_to = 1 << 20;
  OPEN_OR_SKIP(dev, opts);
  Buffer b = aligned_buffer(kAlign);
  fill_pattern(b.get(), kAlign, 3);
  ASSERT_EQ(dev->write(0, b.get(), kAlign).value_or(0), kAlign);
  const IoRequest syncs[2] = {{IoOp::kFsync, 0, nullptr, 0, 1}, {IoOp::kFdatasync, 0, nullptr, 0, 2}};
  ASSERT_TRUE(dev->submit(syncs));
  for (const IoCompletion& c : drain(*dev, 2)) EXPECT_EQ(c.result, 0) << io_op_name(c.op);
  EXPECT_TRUE(dev->sync(true));
  EXPECT_TRUE(dev->sync(false));
  EXPECT_EQ(dev->stats().syncs, 4u);
}

TEST_P(BlockDeviceTest, UnalignedRequestsRejectedBeforeSubmission) {
  BlockOpenOptions opts;
  opts.truncate_to = 1 << 20;
  OPEN_OR_SKIP(dev, opts);
  const std::uint32_t a = dev->offset_alignment();
  Buffer b = aligned_buffer(4 * kAlign);
  const IoRequest good{IoOp::kRead, 0, b.get(), kAlign, 1};
  const IoRequest bad_cases[] = {
      {IoOp::kRead, a / 2, b.get(), kAlign, 2},              // offset
      {IoOp::kWrite, 0, b.get(), a + a / 2, 3},              // length
      {IoOp::kRead, 0, b.get() + 1, kAlign, 4},              // buffer address
      {IoOp::kRead, 0, b.get(), kAlign, 5, 0},               // no buffers registered
      {IoOp::kRead, 0, nullptr, kAlign, 6},                  // no buffer
  };
  for (const IoRequest& bad : bad_cases) {
    const IoRequest batch[2] = {good, bad};
    auto rc = dev->submit(batch);
    ASSERT_FALSE(rc) << "user_data " << bad.user_data;
    EXPECT_EQ(rc.error().code, EINVAL) << rc.error().message;
    EXPECT_NE(rc.error().message.find("request 1"), std::string::npos) << rc.error().message;
    EXPECT_EQ(dev->in_flight(), 0u) << "nothing of a rejected batch is submitted";
  }
  EXPECT_EQ(dev->stats().rejected, 2u * std::size(bad_cases));
  EXPECT_EQ(dev->stats().reads + dev->stats().writes, 0u);
}

TEST_P(BlockDeviceTest, BufferedOpenTakesUnalignedRequests) {
  BlockOpenOptions opts;
  opts.direct = false;
  OPEN_OR_SKIP(dev, opts);
  EXPECT_EQ(dev->offset_alignment(), 1u);
  const char msg[] = "unaligned bytes";
  ASSERT_EQ(dev->write(3, msg, sizeof msg).value_or(0), sizeof msg);
  char back[sizeof msg] = {};
  ASSERT_EQ(dev->read(3, back, sizeof back).value_or(0), sizeof back);
  EXPECT_STREQ(back, msg);
}

TEST_P(BlockDeviceTest, ReadsPastEndOfFileAreShort) {
  BlockOpenOptions opts;
  opts.truncate_to = 2 * kAlign + 1000;  // EOF inside the third 4 KiB block
  OPEN_OR_SKIP(dev, opts);
  Buffer b = aligned_buffer(2 * kAlign);
  const IoRequest reads[2] = {{IoOp::kRead, 2 * kAlign, b.get(), kAlign, 1},
                              {IoOp::kRead, 4 * kAlign, b.get() + kAlign, kAlign, 2}};
  ASSERT_TRUE(dev->submit(reads));
  for (const IoCompletion& c : drain(*dev, 2)) {
    if (c.user_data == 1) {
      EXPECT_EQ(c.result, 1000) << "straddles EOF";
    } else {
      EXPECT_EQ(c.result, 0) << "wholly past EOF";
    }
  }
  EXPECT_EQ(dev->stats().short_transfers, 2u);
  EXPECT_EQ(dev->read(2 * kAlign, b.get(), kAlign).value_or(99), 1000u);
}

TEST_P(BlockDeviceTest, QueueDepthIsEnforced) {
  BlockOpenOptions opts;
  opts.queue_depth = 4;
  opts.truncate_to = 1 << 20;
  OPEN_OR_SKIP(dev, opts);
  Buffer b = aligned_buffer(8 * kAlign);
  std::vector<IoRequest> five;
  for (std::uint64_t i = 0; i < 5; ++i) five.push_back(IoRequest{IoOp::kRead, i * kAlign, b.get() + i * kAlign, kAlign, i});
  auto rc = dev->submit(five);
  ASSERT_FALSE(rc);
  EXPECT_EQ(rc.error().code, EAGAIN);
  ASSERT_TRUE(dev->submit(std::span(five).first(4)));
  EXPECT_EQ(dev->submit(std::span(five).last(1)).error().code, EAGAIN);
  EXPECT_EQ(dev->read(0, b.get(), kAlign).error().code, EBUSY) << "sync I/O needs an idle device";
  EXPECT_EQ(drain(*dev, 4).size(), 4u);
  EXPECT_TRUE(dev->submit(std::span(five).last(1)));
  EXPECT_EQ(drain(*dev, 1).size(), 1u);
}

TEST_P(BlockDeviceTest, FaultyWrapperSurfacesEioAsCompletions) {
  BlockOpenOptions opts;
  opts.truncate_to = 16 * kAlign;
  OPEN_OR_SKIP(inner, opts);
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

TEST_P(BlockDeviceTest, FaultyWrapperShortReadsAndSyncErrors) {
  BlockOpenOptions opts;
  opts.truncate_to = 16 * kAlign;
  OPEN_OR_SKIP(inner, opts);
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

// The uring driver posts every completion on its eventfd so an epoll loop
// can sleep while reads are in flight; posix has none and says so with -1.
TEST_P(BlockDeviceTest, CompletionEventfdWakesOnCompletion) {
  BlockOpenOptions opts;
  opts.truncate_to = 1 << 20;
  OPEN_OR_SKIP(dev, opts);
  const int efd = dev->completion_fd();
  if (GetParam() == Driver::kPosix) {
    EXPECT_EQ(efd, -1);
    return;
  }
  ASSERT_GE(efd, 0) << "io_uring_register_eventfd refused";
  pollfd p{efd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "readable before any I/O";
  Buffer b = aligned_buffer(kAlign);
  fill_pattern(b.get(), kAlign, 9);
  const IoRequest w{IoOp::kWrite, 0, b.get(), static_cast<std::uint32_t>(kAlign), 5};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&w, 1)));
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "no wake-up for a completed write";
  std::uint64_t count = 0;
  ASSERT_EQ(::read(efd, &count, sizeof count), static_cast<ssize_t>(sizeof count));
  EXPECT_GE(count, 1u);
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "reading the counter resets it";
  const auto done = drain(*dev, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result, static_cast<std::int64_t>(kAlign));
  // Reset while nothing is posted: a non-blocking read fails with EAGAIN.
  EXPECT_EQ(::read(efd, &count, sizeof count), -1);
  EXPECT_EQ(errno, EAGAIN);
}

INSTANTIATE_TEST_SUITE_P(Drivers, BlockDeviceTest, ::testing::Values(Driver::kPosix, Driver::kUring), driver_name);

}  // namespace
}  // namespace cxlpool
