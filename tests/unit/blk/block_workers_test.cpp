// SPDX-License-Identifier: Apache-2.0
// hal::make_worker_block_device over each backend: reads spread over two
// worker queues come back whole, a read that asked for a digest carries the
// digest function's value of its bytes (taken on the worker's thread), a
// short read or a device without a digest function carries none, and many
// small batches (the owner wakes a worker only when it sleeps) all complete.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "block_device_conformance.hpp"
#include "cxlpool/hal/block_workers.hpp"
#include "support/faulty_block_device.hpp"

namespace cxlpool::blk_test {
namespace {

// Any function of the bytes will do; this one sees every byte and its place.
std::uint32_t test_digest(std::span<const std::byte> bytes) {
  std::uint32_t h = 2166136261u;
  for (const std::byte b : bytes) h = (h ^ static_cast<std::uint32_t>(b)) * 16777619u;
  return h;
}

constexpr std::size_t kBlock = 16 * 1024, kBlocks = 32;

class WorkerDevice : public BlockDeviceConformance {
 protected:
  // Two queues of the case's backend on its file, behind worker threads.
  std::unique_ptr<hal::BlockDevice> open_workers(std::uint64_t bytes, hal::ReadDigest digest) {
    std::vector<std::unique_ptr<hal::BlockDevice>> queues;
    auto first = open_device(options(bytes));
    if (!first) return nullptr;
    queues.push_back(std::move(first));
    auto second = open_device(options());
    if (!second) return nullptr;
    queues.push_back(std::move(second));
    queues_ = {queues[0].get(), queues[1].get()};
    auto dev = hal::make_worker_block_device(std::move(queues), digest);
    if (!dev) ADD_FAILURE() << dev.error().message;
    return dev ? std::move(*dev) : nullptr;
  }

  // Writes kBlocks patterned blocks through dev and makes them durable.
  static void write_blocks(hal::BlockDevice& dev, std::uint8_t* src) {
    std::vector<IoRequest> batch;
    for (std::size_t b = 0; b < kBlocks; ++b) {
      fill_pattern(src + b * kBlock, kBlock, b + 7);
      batch.push_back(IoRequest{IoOp::kWrite, b * kBlock, src + b * kBlock, kBlock, b});
    }
    ASSERT_TRUE(dev.submit(batch));
    for (const IoCompletion& c : drain(dev, kBlocks)) {
      ASSERT_EQ(c.result, static_cast<std::int64_t>(kBlock));
      EXPECT_FALSE(c.digested) << "writes take no digest";
    }
    ASSERT_TRUE(dev.sync());
  }

  // The queues behind the last open_workers(), for their counts.
  std::vector<const hal::BlockDevice*> queues_;
};

#define WORKERS_OR_SKIP(var, digest)                                  \
  auto var = open_workers(kBlock * kBlocks, digest);                 \
  if (!var && !skip_reason_.empty()) GTEST_SKIP() << skip_reason_;   \
  ASSERT_NE(var, nullptr)

TEST_P(WorkerDevice, ReadsCarryTheDigestOfTheBytesTheyAskedFor) {
  WORKERS_OR_SKIP(dev, &test_digest);
  Buffer src = aligned_buffer(kBlock * kBlocks), dst = aligned_buffer(kBlock * kBlocks);
  ASSERT_NO_FATAL_FAILURE(write_blocks(*dev, src.get()));
  // Odd blocks ask for a digest of part of their bytes, even ones none; a
  // read past the end comes back short and undigested.
  std::vector<IoRequest> batch;
  for (std::size_t b = 0; b < kBlocks; ++b) {
    IoRequest r{IoOp::kRead, b * kBlock, dst.get() + b * kBlock, kBlock, b};
    if (b % 2 == 1) r.digest_bytes = static_cast<std::uint32_t>(kBlock - 100 * b);
    batch.push_back(r);
  }
  ASSERT_TRUE(dev->submit(std::span(batch).first(kBlocks - 1)));
  std::vector<IoCompletion> done = drain(*dev, kBlocks - 1);
  if (traits().past_eof == nullptr) {
    Buffer tail = aligned_buffer(2 * kBlock);
    IoRequest past{IoOp::kRead, (kBlocks - 1) * kBlock, tail.get(), 2 * kBlock, 99};
    past.digest_bytes = 2 * kBlock;
    ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&past, 1)));
    const IoCompletion short_read = drain(*dev, 1).at(0);
    EXPECT_EQ(short_read.user_data, 99u);
    EXPECT_EQ(short_read.result, static_cast<std::int64_t>(kBlock));
    EXPECT_FALSE(short_read.digested) << "a short read's bytes were not all read";
  }
  for (const IoCompletion& c : done) {
    ASSERT_LT(c.user_data, kBlocks - 1);
    const IoRequest& r = batch[c.user_data];
    ASSERT_EQ(c.result, static_cast<std::int64_t>(kBlock)) << "block " << c.user_data;
    EXPECT_EQ(std::memcmp(dst.get() + c.user_data * kBlock, src.get() + c.user_data * kBlock, kBlock), 0);
    ASSERT_EQ(c.digested, r.digest_bytes != 0) << "block " << c.user_data;
    if (c.digested) {
      EXPECT_EQ(c.digest, test_digest({reinterpret_cast<const std::byte*>(r.buffer), r.digest_bytes}))
          << "block " << c.user_data;
    }
  }
}

TEST_P(WorkerDevice, WithoutADigestFunctionNoReadIsDigested) {
  WORKERS_OR_SKIP(dev, nullptr);
  Buffer src = aligned_buffer(kBlock * kBlocks), dst = aligned_buffer(kBlock);
  ASSERT_NO_FATAL_FAILURE(write_blocks(*dev, src.get()));
  IoRequest r{IoOp::kRead, 0, dst.get(), kBlock, 1};
  r.digest_bytes = kBlock;
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r, 1)));
  const IoCompletion c = drain(*dev, 1).at(0);
  EXPECT_EQ(c.result, static_cast<std::int64_t>(kBlock));
  EXPECT_FALSE(c.digested);
}

// One request per submit, each polled before the next and in bursts: the
// owner signals a worker only when it sleeps, so a lost wakeup would hang
// here (the test's timeout) rather than pass.
TEST_P(WorkerDevice, OneRequestAtATimeAndBurstsAllComplete) {
  WORKERS_OR_SKIP(dev, &test_digest);
  Buffer src = aligned_buffer(kBlock * kBlocks), dst = aligned_buffer(kBlock * kBlocks);
  ASSERT_NO_FATAL_FAILURE(write_blocks(*dev, src.get()));
  for (int round = 0; round < 200; ++round) {
    const std::size_t b = static_cast<std::size_t>(round) % kBlocks;
    IoRequest r{IoOp::kRead, b * kBlock, dst.get() + b * kBlock, kBlock, b};
    r.digest_bytes = kBlock;
    ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r, 1)));
    if (round % 8 == 7) continue;  // leave a few in flight: bursts
    for (const IoCompletion& c : drain(*dev, dev->in_flight())) {
      ASSERT_EQ(c.result, static_cast<std::int64_t>(kBlock));
      ASSERT_TRUE(c.digested);
    }
  }
  drain(*dev, dev->in_flight());
  EXPECT_EQ(dev->in_flight(), 0u);
  EXPECT_EQ(std::memcmp(src.get(), dst.get(), kBlock * kBlocks), 0);
}

// An entry filled while the workers are busy reaches every queue: writes
// naming it go to both in turn and all land.
TEST_P(WorkerDevice, AnUpdatedBufferServesEveryQueue) {
  WORKERS_OR_SKIP(dev, nullptr);
  Buffer src = aligned_buffer(kBlock * kBlocks), dst = aligned_buffer(kBlock * kBlocks);
  std::memset(dst.get(), 0, kBlock * kBlocks);
  const iovec set[2] = {{dst.get(), kBlock * kBlocks}, {nullptr, 0}};
  ASSERT_TRUE(dev->register_buffers(set));
  const IoRequest busy{IoOp::kRead, 0, dst.get(), kBlock, 99, 0};
  ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&busy, 1)));
  ASSERT_TRUE(dev->update_buffer(1, iovec{src.get(), kBlock * kBlocks}));
  drain(*dev, 1);
  std::vector<IoRequest> batch;
  for (std::size_t b = 0; b < kBlocks; ++b) {
    fill_pattern(src.get() + b * kBlock, kBlock, b + 3);
    batch.push_back(IoRequest{IoOp::kWrite, b * kBlock, src.get() + b * kBlock, kBlock, b, 1});
  }
  ASSERT_TRUE(dev->submit(batch));
  for (const IoCompletion& c : drain(*dev, kBlocks)) ASSERT_EQ(c.result, static_cast<std::int64_t>(kBlock));
  for (const hal::BlockDevice* q : queues_) EXPECT_GT(q->stats().writes, 0u) << "both queues wrote";
  ASSERT_EQ(dev->read(0, dst.get(), kBlock * kBlocks).value_or(0), kBlock * kBlocks);
  EXPECT_EQ(std::memcmp(src.get(), dst.get(), kBlock * kBlocks), 0);
}

// One queue refusing an update (its pages could not be pinned) leaves the
// entry empty on every queue: a request naming it is refused up front, not
// sent to a queue where it would use the old memory.
TEST_P(WorkerDevice, AnUpdateOneQueueRefusesEmptiesTheEntryOnAll) {
  std::vector<std::unique_ptr<hal::BlockDevice>> queues;
  auto first = open_device(options(kBlock * kBlocks));
  if (!first && !skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  ASSERT_NE(first, nullptr);
  auto second = open_device(options());
  ASSERT_NE(second, nullptr);
  cxlpool::testing::FaultPlan plan;
  plan.fill_updates_allowed = 0;
  auto* refusing = new cxlpool::testing::FaultyBlockDevice(std::move(second), plan);
  const hal::BlockDevice* accepting = first.get();
  queues.push_back(std::move(first));
  queues.push_back(std::unique_ptr<hal::BlockDevice>(refusing));
  auto dev = hal::make_worker_block_device(std::move(queues));
  ASSERT_TRUE(dev) << dev.error().message;
  Buffer a = aligned_buffer(kBlock), b = aligned_buffer(kBlock);
  const iovec set[2] = {{a.get(), kBlock}, {nullptr, 0}};
  ASSERT_TRUE((*dev)->register_buffers(set));
  const auto refused = (*dev)->update_buffer(1, iovec{b.get(), kBlock});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ENOMEM);
  EXPECT_EQ((*dev)->registered_buffer(1).iov_base, nullptr);
  EXPECT_EQ(refusing->registered_buffer(1).iov_base, nullptr);
  EXPECT_EQ(accepting->registered_buffer(1).iov_base, nullptr) << "the queue that took it let it go again";
  const IoRequest from_b{IoOp::kWrite, 0, b.get(), kBlock, 1, 1};
  EXPECT_EQ((*dev)->submit(std::span<const IoRequest>(&from_b, 1)).error().code, EINVAL);
  // Entry 0 still serves both queues.
  const IoRequest reads[2] = {{IoOp::kRead, 0, a.get(), kBlock, 2, 0}, {IoOp::kRead, 0, a.get(), kBlock, 3, 0}};
  ASSERT_TRUE((*dev)->submit(reads));
  for (const IoCompletion& c : drain(**dev, 2)) EXPECT_EQ(c.result, static_cast<std::int64_t>(kBlock));
}

// A log region goes out as small entry headers between large payloads
// written from elsewhere, one request at a time: turns by count alone would
// give every payload to one queue.
TEST_P(WorkerDevice, AlternatingSmallAndLargeWritesSpreadBothOverTheQueues) {
  WORKERS_OR_SKIP(dev, nullptr);
  constexpr std::size_t kSmall = 4096, kLarge = 2 * hal::kSmallWorkerRequest - kSmall;
  constexpr std::size_t kPairs = kBlock * kBlocks / (kSmall + kLarge);
  Buffer src = aligned_buffer(kBlock * kBlocks);
  fill_pattern(src.get(), kBlock * kBlocks, 3);
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < kPairs; ++i) {
    for (const std::size_t length : {kSmall, kLarge}) {
      IoRequest r{IoOp::kWrite, at, src.get() + at, static_cast<std::uint32_t>(length), at};
      ASSERT_TRUE(dev->submit(std::span<const IoRequest>(&r, 1)));
      at += length;
    }
  }
  for (const IoCompletion& c : drain(*dev, 2 * kPairs)) EXPECT_GT(c.result, 0);
  ASSERT_EQ(queues_.size(), 2u);
  for (const hal::BlockDevice* q : queues_) {
    EXPECT_EQ(q->stats().writes, kPairs);
    EXPECT_EQ(q->stats().bytes_written, kPairs / 2 * (kSmall + kLarge)) << "large writes all on one queue";
  }
}

INSTANTIATE_TEST_SUITE_P(Direct, WorkerDevice, ::testing::ValuesIn(block_cases(IoMode::kDirect)), block_case_name);
INSTANTIATE_TEST_SUITE_P(Buffered, WorkerDevice, ::testing::ValuesIn(block_cases(IoMode::kBuffered)), block_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WorkerDevice);

}  // namespace
}  // namespace cxlpool::blk_test
