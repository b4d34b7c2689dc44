// SPDX-License-Identifier: Apache-2.0
// What BlockDevice checks before anything reaches the kernel, the same for
// every backend: malformed and misaligned requests (EINVAL, the whole batch,
// naming the request), the queue depth (EAGAIN), registered buffers, the
// synchronous conveniences on a busy device (EBUSY), and what
// poll_completions promises about `min`, `out` and the timeout.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "block_device_conformance.hpp"

namespace cxlpool::blk_test {
namespace {

TEST_P(DirectBlockDevice, UnalignedRequestsRejectedBeforeSubmission) {
  OPEN_OR_SKIP(dev, options(1 << 20));
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

TEST_P(DirectBlockDevice, GeometryAsksForAlignment) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  const hal::BlockGeometry& g = dev->geometry();
  EXPECT_TRUE(dev->direct());
  EXPECT_GT(g.offset_alignment, 1u);
  EXPECT_GT(g.mem_alignment, 0u);
  EXPECT_EQ(g.logical_block_size, g.offset_alignment);
  EXPECT_FALSE(g.is_block_device);
  EXPECT_TRUE(g.alignment_source == "statx" || g.alignment_source == "default 4096") << g.alignment_source;
}

TEST_P(BufferedBlockDevice, BufferedOpenTakesUnalignedRequests) {
  OPEN_OR_SKIP(dev, options(kAlign));
  EXPECT_FALSE(dev->direct());
  EXPECT_EQ(dev->offset_alignment(), 1u);
  EXPECT_EQ(dev->mem_alignment(), 1u);
  EXPECT_EQ(dev->geometry().alignment_source, "buffered");
  const char msg[] = "unaligned bytes";
  ASSERT_EQ(dev->write(3, msg, sizeof msg).value_or(0), sizeof msg);
  char back[sizeof msg] = {};
  ASSERT_EQ(dev->read(3, back, sizeof back).value_or(0), sizeof back);
  EXPECT_STREQ(back, msg);
}

// Requests that are wrong whatever the alignment: the whole batch is
// refused before anything reaches the kernel.
TEST_P(BlockDeviceConformance, MalformedRequestsRejectedBeforeSubmission) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  Buffer b = aligned_buffer(2 * kAlign);
  const IoRequest good{IoOp::kWrite, 0, b.get(), kAlign, 1};
  const IoRequest bad_cases[] = {
      {IoOp::kRead, 0, nullptr, kAlign, 2},                        // no buffer
      {IoOp::kWrite, 0, b.get(), 0, 3},                            // nothing to transfer
      {IoOp::kRead, 0, b.get(), kAlign, 4, 0},                     // no buffers registered
      {IoOp::kRead, 0, b.get(), kAlign, 5, -7},                    // a negative index
      {IoOp::kRead, ~std::uint64_t{0} - 100, b.get(), kAlign, 6},  // offset + length overflows
      {static_cast<IoOp>(9), 0, b.get(), kAlign, 7},               // no such operation
      {IoOp::kWrite, 0, b.get(), kAlign, 10, -1, 0, 512},          // a digest of a write
      {IoOp::kRead, 0, b.get(), kAlign, 11, -1, 0, kAlign + 1},    // a digest past the read
  };
  for (const IoRequest& bad : bad_cases) {
    const IoRequest batch[3] = {good, good, bad};
    auto rc = dev->submit(batch);
    ASSERT_FALSE(rc) << "user_data " << bad.user_data;
    EXPECT_EQ(rc.error().code, EINVAL) << rc.error().message;
    EXPECT_NE(rc.error().message.find("request 2"), std::string::npos) << rc.error().message;
    EXPECT_EQ(dev->in_flight(), 0u);
  }
  EXPECT_EQ(dev->stats().rejected, 3u * std::size(bad_cases));
  EXPECT_EQ(dev->stats().writes, 0u) << "the good requests of a rejected batch were not run";
  // Syncs carry no buffer: offset, buffer and length are ignored.
  const IoRequest sync{IoOp::kFdatasync, 12345, nullptr, 77, 8};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&sync, 1)));
  EXPECT_EQ(drain(*dev, 1).at(0).result, 0);
}

TEST_P(BlockDeviceConformance, AnEmptyBatchIsAcceptedAndSubmitsNothing) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  EXPECT_TRUE(dev->submit(std::span<const IoRequest>()));
  EXPECT_EQ(dev->in_flight(), 0u);
  EXPECT_EQ(dev->stats().rejected, 0u);
}

TEST_P(BlockDeviceConformance, QueueDepthIsEnforced) {
  BlockOpenOptions opts = options(1 << 20);
  opts.queue_depth = 4;
  OPEN_OR_SKIP(dev, opts);
  EXPECT_EQ(dev->queue_depth(), 4u);
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

TEST_P(BlockDeviceConformance, QueueDepthOfOneTakesOneRequestAtATime) {
  BlockOpenOptions opts = options(1 << 20);
  opts.queue_depth = 1;
  OPEN_OR_SKIP(dev, opts);
  Buffer b = aligned_buffer(2 * kAlign);
  const IoRequest r0{IoOp::kRead, 0, b.get(), kAlign, 0};
  const IoRequest r1{IoOp::kRead, kAlign, b.get() + kAlign, kAlign, 1};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r0, 1)));
  EXPECT_EQ(dev->submit(std::span<const IoRequest>(&r1, 1)).error().code, EAGAIN);
  EXPECT_EQ(drain(*dev, 1).at(0).user_data, 0u);
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r1, 1)));
  EXPECT_EQ(drain(*dev, 1).at(0).user_data, 1u);
}

TEST_P(BlockDeviceConformance, QueueDepthZeroIsRefusedAtOpen) {
  BlockOpenOptions opts = options(1 << 20);
  {
    OPEN_OR_SKIP(usable, opts);  // the EINVAL below is about the depth, not the mode
  }
  opts.queue_depth = 0;
  auto dev = open_raw(opts);
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, EINVAL) << dev.error().message;
}

TEST_P(BlockDeviceConformance, SynchronousCallsNeedAnIdleDevice) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  Buffer b = aligned_buffer(2 * kAlign);
  const IoRequest r{IoOp::kRead, 0, b.get(), kAlign, 1};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r, 1)));
  EXPECT_EQ(dev->read(kAlign, b.get() + kAlign, kAlign).error().code, EBUSY);
  EXPECT_EQ(dev->write(kAlign, b.get() + kAlign, kAlign).error().code, EBUSY);
  EXPECT_EQ(dev->sync().error().code, EBUSY);
  EXPECT_EQ(dev->in_flight(), 1u) << "a refused call leaves what is in flight alone";
  EXPECT_EQ(drain(*dev, 1).size(), 1u);
  EXPECT_TRUE(dev->sync());
}

TEST_P(BlockDeviceConformance, RegisterBuffersReplacesTheSetWhileIdle) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  Buffer a = aligned_buffer(4 * kAlign), b = aligned_buffer(4 * kAlign);
  const iovec two[2] = {{a.get(), 4 * kAlign}, {b.get(), 4 * kAlign}};
  ASSERT_TRUE(dev->register_buffers(two));
  ASSERT_EQ(dev->registered_buffer_count(), 2u);

  // Not while I/O is in flight: the kernel may be using them.
  const IoRequest r{IoOp::kRead, 0, b.get(), kAlign, 1, 1};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r, 1)));
  EXPECT_EQ(dev->register_buffers(std::span<const iovec>(two, 1)).error().code, EBUSY);
  EXPECT_EQ(dev->registered_buffer_count(), 2u);
  EXPECT_EQ(drain(*dev, 1).at(0).result, static_cast<std::int64_t>(kAlign));

  // A half-empty entry is refused and the set stays as it was.
  const iovec no_length[2] = {{a.get(), 4 * kAlign}, {b.get(), 0}};
  const iovec no_base[2] = {{a.get(), 4 * kAlign}, {nullptr, kAlign}};
  EXPECT_EQ(dev->register_buffers(no_length).error().code, EINVAL);
  EXPECT_EQ(dev->register_buffers(no_base).error().code, EINVAL);
  EXPECT_EQ(dev->registered_buffer_count(), 2u);

  // A new set replaces the old one: index 1 is gone, index 0 works.
  ASSERT_TRUE(dev->register_buffers(std::span<const iovec>(two, 1)));
  EXPECT_EQ(dev->registered_buffer_count(), 1u);
  EXPECT_EQ(dev->submit(std::span<const IoRequest>(&r, 1)).error().code, EINVAL);
  const IoRequest in_a{IoOp::kWrite, 0, a.get() + kAlign, kAlign, 2, 0};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&in_a, 1)));
  EXPECT_EQ(drain(*dev, 1).at(0).result, static_cast<std::int64_t>(kAlign));

  // The empty set: no request may name a buffer.
  ASSERT_TRUE(dev->register_buffers(std::span<const iovec>()));
  EXPECT_EQ(dev->registered_buffer_count(), 0u);
  EXPECT_EQ(dev->submit(std::span<const IoRequest>(&in_a, 1)).error().code, EINVAL);
}

// An empty entry is registered as a place for update_buffer(): no request
// may name it until it is filled, and an update of one entry leaves the
// others (and a request in flight on them) alone.
TEST_P(BlockDeviceConformance, UpdateBufferFillsAndEmptiesOneEntry) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  Buffer a = aligned_buffer(4 * kAlign), b = aligned_buffer(4 * kAlign);
  fill_pattern(b.get(), 4 * kAlign, 11);
  std::memset(a.get(), 0, 4 * kAlign);
  const iovec set[3] = {{a.get(), 4 * kAlign}, {nullptr, 0}, {nullptr, 0}};
  ASSERT_TRUE(dev->register_buffers(set));
  ASSERT_EQ(dev->registered_buffer_count(), 3u);
  const IoRequest from_b{IoOp::kWrite, 0, b.get(), 4 * kAlign, 1, 1};
  EXPECT_EQ(dev->submit(std::span<const IoRequest>(&from_b, 1)).error().code, EINVAL) << "entry 1 is empty";

  // Filled while a read on entry 0 is in flight.
  const IoRequest into_a{IoOp::kRead, 0, a.get(), kAlign, 2, 0};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&into_a, 1)));
  ASSERT_TRUE(dev->update_buffer(1, iovec{b.get(), 4 * kAlign}));
  EXPECT_EQ(drain(*dev, 1).at(0).result, static_cast<std::int64_t>(kAlign));
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&from_b, 1)));
  EXPECT_EQ(drain(*dev, 1).at(0).result, static_cast<std::int64_t>(4 * kAlign));
  const IoRequest back{IoOp::kRead, 0, a.get(), 4 * kAlign, 3, 0};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&back, 1)));
  EXPECT_EQ(drain(*dev, 1).at(0).result, static_cast<std::int64_t>(4 * kAlign));
  EXPECT_EQ(std::memcmp(a.get(), b.get(), 4 * kAlign), 0) << "written from the updated entry, read through entry 0";

  // Out of range or half-empty: refused, nothing changes.
  EXPECT_EQ(dev->update_buffer(3, iovec{b.get(), kAlign}).error().code, EINVAL);
  EXPECT_EQ(dev->update_buffer(2, iovec{b.get(), 0}).error().code, EINVAL);
  EXPECT_EQ(dev->registered_buffer_count(), 3u);

  // Emptied again: refused once more.
  ASSERT_TRUE(dev->update_buffer(1, iovec{nullptr, 0}));
  EXPECT_EQ(dev->submit(std::span<const IoRequest>(&from_b, 1)).error().code, EINVAL);
}

// poll_completions: `min` is capped at what is in flight (it never waits for
// completions that cannot come), at most out.size() come back, and a
// timeout is not an error.
TEST_P(BlockDeviceConformance, PollHonoursMinMaxAndTimeout) {
  OPEN_OR_SKIP(dev, options(1 << 20));
  std::vector<IoCompletion> out(8);
  auto none = dev->poll_completions(out, 4);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, 0u) << "nothing in flight: returns at once";

  Buffer b = aligned_buffer(8 * kAlign);
  std::vector<IoRequest> reads;
  for (std::uint64_t i = 0; i < 4; ++i) reads.push_back(IoRequest{IoOp::kRead, i * kAlign, b.get() + i * kAlign, kAlign, i});

  ASSERT_TRUE(dev->submit(std::span(reads).first(3)));
  auto capped = dev->poll_completions(out, 8);
  ASSERT_TRUE(capped) << capped.error().message;
  EXPECT_EQ(*capped, 3u) << "min 8 with 3 in flight waits for the 3";
  EXPECT_EQ(dev->in_flight(), 0u);

  ASSERT_TRUE(dev->submit(reads));
  EXPECT_EQ(*dev->poll_completions(std::span<IoCompletion>(), 1), 0u) << "no room: nothing taken";
  EXPECT_EQ(dev->in_flight(), 4u);
  for (std::uint32_t left = 4; left > 0; --left) {
    auto one = dev->poll_completions(std::span(out).first(1), 1);
    ASSERT_TRUE(one) << one.error().message;
    ASSERT_EQ(*one, 1u) << "at most out.size()";
    EXPECT_EQ(dev->in_flight(), left - 1);
  }

  ASSERT_TRUE(dev->submit(std::span(reads).first(2)));
  auto quick = dev->poll_completions(out, 2, std::chrono::nanoseconds(0));
  ASSERT_TRUE(quick) << "a timeout is not an error";
  EXPECT_LE(*quick, 2u);
  drain(*dev, 2 - *quick);
  EXPECT_EQ(dev->in_flight(), 0u);
  EXPECT_EQ(dev->stats().reads, 9u);
}

}  // namespace
}  // namespace cxlpool::blk_test
