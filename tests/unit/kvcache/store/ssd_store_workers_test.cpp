// SPDX-License-Identifier: Apache-2.0
// The SSD log over worker threads (hal::make_worker_block_device), one and
// four, each with an io_uring queue of its own: many gets in flight while
// puts go on come back byte-exact, the workers take every read's CRC32C
// and a damaged entry still fails its get, and a queue's failure inside a
// worker reaches the store's caller with its errno.
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "ssd_store_fixture.hpp"

namespace cxlpool::kvcache {
namespace {

using namespace ssd_test;  // NOLINT(google-build-using-namespace): the fixture's vocabulary

class SsdStoreWorkersTest : public SsdStoreTest {
 protected:
  // Worker queues that each fail data operations as `plan` says (counted
  // per queue).
  std::unique_ptr<hal::BlockDevice> failing_workers(const FaultPlan& plan) {
    auto first = device();
    if (!first) return nullptr;
    first.reset();  // created and sized the file; the queues below open it
    hal::BlockOpenOptions options;
    std::vector<std::unique_ptr<hal::BlockDevice>> queues;
    for (std::uint32_t i = 0; i < worker_count(GetParam()); ++i) {
      auto queue = hal::open_block_device("uring", path_, options);
      if (!queue) {
        ADD_FAILURE() << queue.error().message;
        return nullptr;
      }
      queues.push_back(std::make_unique<cxlpool::testing::FaultyBlockDevice>(std::move(*queue), plan));
    }
    auto dev = hal::make_worker_block_device(std::move(queues), &ssd_read_digest);
    if (!dev) ADD_FAILURE() << dev.error().message;
    return dev ? std::move(*dev) : nullptr;
  }

  // Gets of entries 0..n-1, each into a buffer of its own, user_data = entry.
  struct Gets {
    std::vector<Buffer> buffers;
    std::vector<SsdGetRequest> requests;
  };
  static Gets gets_of(std::uint32_t n) {
    const std::uint32_t padded = SsdStore::read_buffer_bytes(kPayload);
    Gets g;
    for (std::uint32_t i = 0; i < n; ++i) {
      g.buffers.push_back(aligned_buffer(padded));
      g.requests.push_back({key_of(i), {g.buffers.back().get(), padded}, i});
    }
    return g;
  }
};

TEST_P(SsdStoreWorkersTest, ManyGetsInFlightWhilePutsGoOnAreByteExact) {
  STORE_OR_SKIP(store, open_store(device(64), SsdSyncPolicy::kPerRegion));
  constexpr std::uint32_t kFirst = 24, kMore = 12;
  ASSERT_NO_FATAL_FAILURE(put_on_device(*store, kFirst));
  auto [buffers, requests] = gets_of(kFirst);
  std::size_t submitted = 0;
  std::vector<SsdGetCompletion> out(kFirst);
  std::vector<bool> seen(kFirst, false);
  std::size_t done = 0;
  std::uint32_t next_put = kFirst;
  while (done < kFirst) {
    if (submitted < requests.size()) {
      submitted += store->submit_gets(std::span(requests).subspan(submitted));
    }
    // Puts while the reads are on the workers: each may seal a region and
    // send its write to a worker too.
    if (next_put < kFirst + kMore) {
      ASSERT_EQ(store->put(key_of(next_put), kNs, payload_of(next_put)).outcome, KvStatus::kOk);
      ++next_put;
    }
    auto got = store->poll_gets(out, 1);
    ASSERT_TRUE(got) << got.error().message;
    for (std::size_t c = 0; c < *got; ++c) {
      const SsdGetCompletion& completion = out[c];
      ASSERT_LT(completion.user_data, kFirst);
      ASSERT_FALSE(seen[completion.user_data]) << "completed twice";
      seen[completion.user_data] = true;
      ASSERT_EQ(completion.outcome, KvStatus::kOk) << "entry " << completion.user_data;
      ASSERT_EQ(completion.payload_bytes, kPayload);
      const auto want = payload_of(completion.user_data);
      EXPECT_EQ(std::memcmp(buffers[completion.user_data].get(), want.data(), kPayload), 0)
          << "entry " << completion.user_data;
      ++done;
    }
  }
  while (next_put < kFirst + kMore) {
    ASSERT_EQ(store->put(key_of(next_put), kNs, payload_of(next_put)).outcome, KvStatus::kOk);
    ++next_put;
  }
  ASSERT_TRUE(store->flush());
  for (std::uint32_t i = 0; i < kFirst + kMore; ++i) ASSERT_NO_FATAL_FAILURE(expect_entry(*store, i));
  EXPECT_EQ(store->stats().read_errors, 0u);
  EXPECT_EQ(store->stats().write_errors, 0u);
}

TEST_P(SsdStoreWorkersTest, WorkersChecksumEveryReadAndADamagedEntryFailsItsGetOnly) {
  STORE_OR_SKIP(store, open_store(device(64), SsdSyncPolicy::kPerRegion));
  constexpr std::uint32_t kCount = 9, kDamaged = 4;
  ASSERT_NO_FATAL_FAILURE(put_on_device(*store, kCount));
  ASSERT_NO_FATAL_FAILURE(flip_payload_byte(kDamaged, 777));
  auto [buffers, requests] = gets_of(kCount);
  ASSERT_EQ(store->submit_gets(requests), kCount);
  std::vector<SsdGetCompletion> out(kCount);
  std::size_t done = 0;
  while (done < kCount) {
    auto got = store->poll_gets(std::span(out).subspan(done), 1);
    ASSERT_TRUE(got) << got.error().message;
    done += *got;
  }
  for (const SsdGetCompletion& c : out) {
    if (c.user_data == kDamaged) {
      EXPECT_EQ(c.outcome, KvStatus::kChecksumError);
      continue;
    }
    ASSERT_EQ(c.outcome, KvStatus::kOk) << "entry " << c.user_data;
    const auto want = payload_of(c.user_data);
    EXPECT_EQ(std::memcmp(buffers[c.user_data].get(), want.data(), kPayload), 0) << "entry " << c.user_data;
  }
  // Every read's checksum came from a worker, none from this thread.
  EXPECT_EQ(store->stats().worker_verifies, kCount);
  EXPECT_EQ(store->stats().corrupt_dropped, 1u);
  EXPECT_FALSE(store->contains(key_of(kDamaged)));
}

TEST_P(SsdStoreWorkersTest, AQueueFailureInAWorkerReachesTheCaller) {
  FaultPlan plan;
  plan.fail_errno = EROFS;
  if (worker_count(GetParam()) == 1) {
    // Ops: 16 header reads at open, the seal of region 0 at the 4th put,
    // the flush of region 1; then the get's read fails in the worker.
    plan.fail_nth_op = kRegions + 3;
    STORE_OR_SKIP(store, open_store(failing_workers(plan), SsdSyncPolicy::kPerRegion));
    ASSERT_NO_FATAL_FAILURE(put_on_device(*store, 6));
    Buffer buf = aligned_buffer(kRegion);
    const KvResult<std::uint32_t> got = store->get(key_of(0), {buf.get(), kRegion});
    EXPECT_EQ(got.outcome, KvOutcome::device_error(EROFS));
    EXPECT_EQ(store->stats().read_errors, 1u);
    EXPECT_FALSE(store->contains(key_of(0)));
    expect_entry(*store, 1);
    return;
  }
  // Every queue fails every read: the scan at open fails with the errno.
  plan.fail_nth_op = 1;
  plan.fail_all_after = true;
  auto dev = failing_workers(plan);
  if (!dev && !skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_NE(dev, nullptr);
  SsdStoreConfig config;
  config.region_bytes = kRegion;
  auto store = SsdStore::open(std::move(dev), config);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, EROFS) << store.error().message;
}

INSTANTIATE_TEST_SUITE_P(Workers, SsdStoreWorkersTest,
                         ::testing::Values(Driver::kUringWorkers1, Driver::kUringWorkers4), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache
