// SPDX-License-Identifier: Apache-2.0
// SsdStore's asynchronous region writes (per-region policy), with write
// completions held back by the fault-injecting double: entries of a region
// in flight are served from its buffer, durability advances in seal order
// whatever order the writes complete in, a failed write drops its region's
// entries (never served afterwards), and closing or destroying the store
// waits for writes in flight.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ssd_store_fixture.hpp"

namespace cxlpool::kvcache {
namespace {

using namespace ssd_test;  // NOLINT(google-build-using-namespace): the fixture's vocabulary

class SsdStoreAsyncTest : public SsdStoreTest {
 protected:
  std::uint64_t device_reads() const { return faulty_->inner().stats().reads; }

  // Hands out the held completion of region `region`'s write.
  void release_region(std::uint32_t region) {
    for (std::size_t i = 0; i < faulty_->held(); ++i) {
      if (faulty_->held_offset(i) == std::uint64_t{region} * kRegion) return faulty_->release_held(i);
    }
    ADD_FAILURE() << "no write of region " << region << " is held";
  }
};

// Reads into unregistered buffers go through the registered staging
// buffers while one is free (the rest read straight into their buffer), and
// every one lands whole in the caller's buffer.
TEST_P(SsdStoreAsyncTest, ReadsIntoUnregisteredBuffersGoThroughStaging) {
  auto dev = device();
  if (!dev && !skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_NE(dev, nullptr);
  SsdStoreConfig config;
  config.region_bytes = kRegion;
  config.read_staging = 2;
  config.staging_bytes = kPayload;
  auto opened = SsdStore::open(std::move(dev), config);
  ASSERT_TRUE(opened) << opened.error().message;
  SsdStore& store = **opened;
  constexpr std::uint32_t kReads = 6;
  ASSERT_NO_FATAL_FAILURE(put_entries(store, 0, kReads));
  ASSERT_TRUE(store.flush());
  const bool registered = store.register_buffers({}).has_value();
  const std::uint32_t length = SsdStore::read_buffer_bytes(kPayload);
  std::vector<Buffer> bufs;
  std::vector<SsdGetRequest> requests;
  for (std::uint32_t i = 0; i < kReads; ++i) {
    bufs.push_back(aligned_buffer(length));
    std::memset(bufs.back().get(), 0xEE, length);
    requests.push_back(SsdGetRequest{key_of(i), {bufs.back().get(), length}, i});
  }
  std::vector<SsdGetCompletion> out(kReads);
  // Every read at once, each landing whole in its buffer.
  const auto read_all = [&] {
    for (Buffer& b : bufs) std::memset(b.get(), 0xEE, length);
    ASSERT_EQ(store.submit_gets(requests), kReads);
    std::size_t done = 0;
    while (done < kReads) {
      auto got = store.poll_gets(std::span(out).subspan(done), 1);
      ASSERT_TRUE(got);
      done += *got;
    }
    for (const SsdGetCompletion& c : out) {
      ASSERT_EQ(c.outcome, KvStatus::kOk) << c.user_data;
      EXPECT_EQ(std::memcmp(bufs[c.user_data].get(), payload_of(c.user_data).data(), kPayload), 0) << c.user_data;
    }
  };
  ASSERT_NO_FATAL_FAILURE(read_all());
  if (registered) {
    EXPECT_EQ(store.stats().staged_reads, 2u) << "one read per staging buffer; the rest went direct";
  } else {
    EXPECT_EQ(store.stats().staged_reads, 0u) << "a device without fixed buffers reads direct";
  }
  // Staging buffers come back: a second round stages again.
  ASSERT_EQ(store.submit_gets(std::span(requests).first(2)), 2u);
  EXPECT_FALSE(store.release_staging()) << "not while reads use them";
  std::size_t done = 0;
  while (done < 2) done += store.poll_gets(std::span(out).subspan(done, 2 - done), 1).value();
  EXPECT_EQ(store.stats().staged_reads, registered ? 4u : 0u);

  // Released (for a caller whose buffers are all registered): reads go
  // straight into their buffers, and land whole.
  ASSERT_TRUE(store.release_staging());
  ASSERT_NO_FATAL_FAILURE(read_all());
  EXPECT_EQ(store.stats().staged_reads, registered ? 4u : 0u) << "no staging left";

  // Brought back into their places: the first two reads stage again.
  store.restore_staging();
  ASSERT_NO_FATAL_FAILURE(read_all());
  EXPECT_EQ(store.stats().staged_reads, registered ? 6u : 0u);
}

TEST_P(SsdStoreAsyncTest, RegionInFlightIsServedFromItsBufferUntilItsWriteCompletes) {
  STORE_OR_SKIP(store, open_held());
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, kEntriesPerRegion + 1));
  // Region 0 is sealed and on its way; its completion is held back.
  poll_until(*store, [&] { return faulty_->held() == 1; });
  std::vector<SsdGetCompletion> out(4);
  EXPECT_EQ(store->writes_in_flight(), 1u);
  EXPECT_EQ(store->durable_sequence(), 0u);

  const std::uint64_t reads_before = device_reads();
  expect_entry(*store, 0);
  Buffer buf = aligned_buffer(SsdStore::read_buffer_bytes(kPayload));
  std::vector<SsdGetRequest> requests{{key_of(1), {buf.get(), SsdStore::read_buffer_bytes(kPayload)}, 7}};
  ASSERT_EQ(store->submit_gets(requests), 1u);
  ASSERT_EQ(store->poll_gets(out, 1).value(), 1u);
  EXPECT_EQ(out[0].user_data, 7u);
  ASSERT_EQ(out[0].outcome, KvStatus::kOk);
  EXPECT_EQ(std::memcmp(buf.get(), payload_of(1).data(), kPayload), 0);
  EXPECT_EQ(store->stats().buffer_reads, 2u);
  EXPECT_EQ(device_reads(), reads_before) << "served from the region buffer, not the device";
  EXPECT_EQ(store->writes_in_flight(), 1u);

  release_region(0);
  ASSERT_TRUE(store->wait_for_writes());
  EXPECT_EQ(store->writes_in_flight(), 0u);
  EXPECT_EQ(store->durable_sequence(), kEntriesPerRegion);
  EXPECT_GE(store->stats().syncs, 1u);
  // Now the device has it: reads go there.
  expect_entry(*store, 2);
  EXPECT_EQ(device_reads(), reads_before + 1);
  EXPECT_EQ(store->stats().buffer_reads, 2u);
  expect_entry(*store, kEntriesPerRegion);  // the open region: its buffer
  EXPECT_EQ(store->stats().buffer_reads, 3u);
}

TEST_P(SsdStoreAsyncTest, DurabilityAdvancesInSealOrderWhateverOrderWritesComplete) {
  STORE_OR_SKIP(store, open_held());
  constexpr std::uint32_t kCount = 3 * kEntriesPerRegion + 1;  // regions 0-2 sealed, 3 open
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, kCount));
  poll_until(*store, [&] { return faulty_->held() == 3; });
  EXPECT_EQ(store->writes_in_flight(), 3u);

  // Region 2 completes first (and its fdatasync): regions 0 and 1 are still
  // in flight, so nothing is durable yet.
  release_region(2);
  poll_until(*store, [&] { return store->stats().syncs >= 1; });
  EXPECT_EQ(store->durable_sequence(), 0u);
  const std::uint64_t reads = device_reads();
  expect_entry(*store, 2 * kEntriesPerRegion);  // region 2: from the device
  EXPECT_EQ(device_reads(), reads + 1);
  expect_entry(*store, 0);                      // region 0: still its buffer
  EXPECT_EQ(device_reads(), reads + 1);

  release_region(0);
  poll_until(*store, [&] { return store->stats().syncs >= 2; });
  EXPECT_EQ(store->durable_sequence(), kEntriesPerRegion) << "region 1 is still in flight";

  release_region(1);
  poll_until(*store, [&] { return store->writes_in_flight() == 0; });
  EXPECT_EQ(store->durable_sequence(), 3u * kEntriesPerRegion);
  for (std::uint32_t i = 0; i < kCount; ++i) expect_entry(*store, i);
  EXPECT_EQ(store->stats().write_errors, 0u);
}

TEST_P(SsdStoreAsyncTest, FailedRegionWriteDropsItsEntriesWhichAreNeverServed) {
  // Op kRegions + 1 is the first after the scan's header reads: region 0's write.
  FaultPlan plan;
  plan.fail_nth_op = kRegions + 1;
  STORE_OR_SKIP(store, open_held(plan));
  std::vector<ChunkKey> evicted;
  store->set_eviction_listener([&](const ChunkKey& k) { evicted.push_back(k); });
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, kEntriesPerRegion + 1));
  // Key 0 gets a new value (in region 1) before the failure is reaped: it
  // does not depend on region 0 any more and stays.
  ASSERT_TRUE(store->put(key_of(0), kNs, payload_of(100)));
  std::vector<SsdGetCompletion> out(4);
  ASSERT_TRUE(store->poll_gets(out, 0, std::chrono::nanoseconds(0)));
  EXPECT_EQ(faulty_->injected(), 1u);
  EXPECT_EQ(store->writes_in_flight(), 0u);
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[0], key_of(1));
  EXPECT_EQ(evicted[1], key_of(2));
  EXPECT_EQ(store->stats().write_dropped, 2u);
  EXPECT_EQ(store->stats().write_errors, 1u);
  Buffer buf = aligned_buffer(kRegion);
  for (std::uint32_t i : {1u, 2u}) {
    EXPECT_FALSE(store->contains(key_of(i)));
    EXPECT_EQ(store->get(key_of(i), {buf.get(), kRegion}).outcome, KvStatus::kNotFound);
  }
  auto got = store->get(key_of(0), {buf.get(), kRegion});
  ASSERT_TRUE(got);
  EXPECT_EQ(std::memcmp(buf.get(), payload_of(100).data(), kPayload), 0);
  expect_entry(*store, kEntriesPerRegion);

  // The failure is reported once, by the next flush.
  auto flushed = store->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().code, EIO);
  ASSERT_TRUE(store->flush());
  // The log goes on; a restart finds what was written and nothing of region 0.
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 10, 14));
  ASSERT_TRUE(store->close());
  store.reset();
  STORE_OR_SKIP(again, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(again->stats().corrupt_dropped, 0u);
  EXPECT_FALSE(again->contains(key_of(1)));
  EXPECT_FALSE(again->contains(key_of(2)));
  auto got0 = again->get(key_of(0), {buf.get(), kRegion});
  ASSERT_TRUE(got0);
  EXPECT_EQ(std::memcmp(buf.get(), payload_of(100).data(), kPayload), 0);
  expect_entry(*again, kEntriesPerRegion);
  for (std::uint32_t i = 10; i < 14; ++i) expect_entry(*again, i);
  EXPECT_EQ(again->size(), 6u);
}

TEST_P(SsdStoreAsyncTest, CloseAndDestructionWaitForWritesInFlight) {
  {
    STORE_OR_SKIP(store, open_held());
    ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, kEntriesPerRegion + 1));
    ASSERT_EQ(store->writes_in_flight(), 1u);
    // Destroyed without close(): region 0's write still ends first.
  }
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
    EXPECT_EQ(store->size(), kEntriesPerRegion) << "region 0 is there, the unsealed region 1 is not";
    for (std::uint32_t i = 0; i < kEntriesPerRegion; ++i) expect_entry(*store, i);
  }
  {
    STORE_OR_SKIP(store, open_held());
    ASSERT_NO_FATAL_FAILURE(put_entries(*store, 20, 27));
    EXPECT_GT(store->writes_in_flight(), 0u);
    ASSERT_TRUE(store->close());
    EXPECT_EQ(store->writes_in_flight(), 0u);
    EXPECT_EQ(store->durable_sequence(), kEntriesPerRegion + 7u);
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(store->size(), kEntriesPerRegion + 7u);
  for (std::uint32_t i = 20; i < 27; ++i) expect_entry(*store, i);
}

TEST_P(SsdStoreAsyncTest, PutWaitsForABufferWhenEveryOneIsInFlight) {
  STORE_OR_SKIP(store, open_held({}, 2));
  // Region 0 is written from one buffer while region 1 fills the other; the
  // seal of region 1 finds no free buffer and waits for region 0's write.
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, 2 * kEntriesPerRegion));
  EXPECT_EQ(store->stats().write_stalls, 0u);
  ASSERT_TRUE(store->put(key_of(100), kNs, payload_of(100)));
  EXPECT_EQ(store->stats().write_stalls, 1u);
  for (std::uint32_t i = 0; i < 2 * kEntriesPerRegion; ++i) expect_entry(*store, i);
  expect_entry(*store, 100);
  ASSERT_TRUE(store->close());
  EXPECT_EQ(store->durable_sequence(), 2u * kEntriesPerRegion + 1);
}

INSTANTIATE_TEST_SUITE_P(Drivers, SsdStoreAsyncTest, all_drivers(), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache
