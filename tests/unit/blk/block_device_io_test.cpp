// SPDX-License-Identifier: Apache-2.0
// The data path every BlockEngine backend must give: batches at full queue
// depth written and read back byte for byte, registered buffers, syncs,
// short reads at the end of the file, the statistics, and completions
// signalled on the backend's eventfd when it has one.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "block_device_conformance.hpp"

namespace cxlpool::blk_test {
namespace {

TEST_P(BlockDeviceConformance, WriteThenReadBackAtQueueDepth32) {
  constexpr std::size_t kBlock = 64 * 1024, kBlocks = 96;
  OPEN_OR_SKIP(dev, options(kBlock * kBlocks));
  EXPECT_EQ(dev->size(), kBlock * kBlocks);
  EXPECT_EQ(dev->queue_depth(), 32u);
  EXPECT_EQ(dev->direct(), direct());
  if (direct()) {
    EXPECT_GT(dev->offset_alignment(), 1u) << "O_DIRECT needs an alignment";
    EXPECT_EQ(kAlign % dev->mem_alignment(), 0u);
  }

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
        EXPECT_EQ(c.length, kBlock);
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
  EXPECT_EQ(dev->stats().short_transfers, 0u);
  EXPECT_EQ(dev->stats().rejected, 0u);
}

// cxlpool-io asks io_uring for cooperative task running (completions post
// when the waiter enters the kernel): waiting inside poll_completions must
// still see every completion, with the right bytes. Other backends ignore
// the option and must work the same.
TEST_P(BlockDeviceConformance, CooperativeTaskRunStillCompletesEveryRequest) {
  constexpr std::size_t kBlock = 4096, kBlocks = 64;
  BlockOpenOptions opts = options(kBlock * kBlocks);
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

// A ring that serves one thread: usable from the thread that binds it (a
// no-op for backends without the restriction).
TEST_P(BlockDeviceConformance, SingleThreadDeviceWorksAfterBinding) {
  BlockOpenOptions opts = options(16 * kAlign);
  opts.single_thread = true;
  OPEN_OR_SKIP(dev, opts);
  ASSERT_TRUE(dev->bind_to_thread());
  Buffer out = aligned_buffer(kAlign), in = aligned_buffer(kAlign);
  fill_pattern(out.get(), kAlign, 11);
  ASSERT_EQ(dev->write(3 * kAlign, out.get(), kAlign).value_or(0), kAlign);
  ASSERT_EQ(dev->read(3 * kAlign, in.get(), kAlign).value_or(0), kAlign);
  EXPECT_EQ(std::memcmp(out.get(), in.get(), kAlign), 0);
}

TEST_P(BlockDeviceConformance, RegisteredBuffers) {
  constexpr std::size_t kBlock = 16 * 1024, kBlocks = 32;
  OPEN_OR_SKIP(dev, options(kBlock * kBlocks));
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

TEST_P(BlockDeviceConformance, FsyncAndFdatasyncComplete) {
  OPEN_OR_SKIP(dev, options(1 << 20));
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

TEST_P(BlockDeviceConformance, ReadsPastEndOfFileAreShort) {
  if (const char* why = traits().past_eof) GTEST_SKIP() << why;
  BlockOpenOptions opts = options(2 * kAlign + 1000);  // EOF inside the third 4 KiB block
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
  EXPECT_EQ(dev->stats().errors, 0u) << "a short read is not an error";
  EXPECT_EQ(dev->read(2 * kAlign, b.get(), kAlign).value_or(99), 1000u);
}

// The uring driver posts every completion on its eventfd so an epoll loop
// can sleep while reads are in flight; a backend without one says so with -1.
TEST_P(BlockDeviceConformance, CompletionEventfdWakesOnCompletion) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  const int efd = dev->completion_fd();
  if (!traits().completion_eventfd) {
    EXPECT_EQ(efd, -1);
    GTEST_SKIP() << backend() << " has no completion eventfd: its owner polls while in_flight() is non-zero";
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

}  // namespace
}  // namespace cxlpool::blk_test
