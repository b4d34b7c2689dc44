// SPDX-License-Identifier: Apache-2.0
// SsdStore over both block drivers on a file in the build tree: round trips,
// restart recovery, torn and corrupt data on disk, injected I/O faults, and
// FIFO eviction with reinsertion of hot entries.
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "ssd_store_fixture.hpp"

namespace cxlpool::kvcache {
namespace {

using namespace ssd_test;  // NOLINT(google-build-using-namespace): the fixture's vocabulary

TEST_P(SsdStoreTest, PutGetAcrossRegionsSyncAndBatched) {
  STORE_OR_SKIP(store, open_store(device(8), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(store->region_count(), kRegions);
  EXPECT_EQ(store->size(), 0u);
  constexpr std::uint32_t kCount = 30;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    auto seq = store->put(key_of(i), kNs, payload_of(i));
    ASSERT_EQ(seq.outcome, KvStatus::kOk);
    EXPECT_EQ(*seq, i + 1u);
  }
  EXPECT_EQ(store->size(), kCount);
  EXPECT_EQ(store->stats().regions_sealed, kCount / kEntriesPerRegion - 1);
  // Once their writes complete every sealed region is durable; the open one
  // is not yet.
  ASSERT_TRUE(store->wait_for_writes());
  EXPECT_EQ(store->writes_in_flight(), 0u);
  EXPECT_EQ(store->durable_sequence(), kCount - kEntriesPerRegion);
  for (std::uint32_t i = 0; i < kCount; ++i) expect_entry(*store, i);

  // Batched: more gets than the device queue (8) holds.
  std::vector<Buffer> bufs;
  std::vector<SsdGetRequest> requests;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    bufs.push_back(aligned_buffer(SsdStore::read_buffer_bytes(kPayload)));
    requests.push_back(SsdGetRequest{key_of(i), {bufs.back().get(), SsdStore::read_buffer_bytes(kPayload)}, i});
  }
  requests.push_back(SsdGetRequest{key_of(999), {bufs[0].get(), kSsdBlockBytes}, 999});
  std::size_t submitted = 0, done = 0;
  std::vector<bool> seen(kCount, false);
  std::vector<SsdGetCompletion> out(16);
  while (done < requests.size()) {
    if (submitted < requests.size()) {
      submitted += store->submit_gets(std::span(requests).subspan(submitted));
    }
    EXPECT_LE(store->device().in_flight(), 8u);
    auto got = store->poll_gets(out, 1);
    ASSERT_TRUE(got) << got.error().message;
    for (std::size_t c = 0; c < *got; ++c) {
      ++done;
      if (out[c].user_data == 999) {
        EXPECT_EQ(out[c].outcome, KvStatus::kNotFound);
        continue;
      }
      const std::uint64_t i = out[c].user_data;
      ASSERT_LT(i, kCount);
      ASSERT_EQ(out[c].outcome, KvStatus::kOk) << "entry " << i;
      EXPECT_FALSE(seen[i]);
      seen[i] = true;
      EXPECT_EQ(out[c].payload_bytes, kPayload);
      const auto want = payload_of(i);
      EXPECT_EQ(std::memcmp(bufs[i].get(), want.data(), kPayload), 0) << "entry " << i;
    }
  }
  EXPECT_EQ(store->gets_in_flight(), 0u);
  EXPECT_EQ(store->stats().reads, 2u * kCount);
  EXPECT_EQ(store->stats().misses, 1u);

  // A buffer too small or misaligned for the padded payload is refused.
  Buffer small = aligned_buffer(kRegion);
  EXPECT_EQ(store->get(key_of(0), {small.get(), kPayload}).outcome, KvStatus::kInvalid);
  EXPECT_EQ(store->get(key_of(0), {small.get() + 8, kRegion - 8}).outcome, KvStatus::kInvalid);

  // Overwrite and erase.
  ASSERT_TRUE(store->put(key_of(3), kNs, payload_of(103, 500)));
  Buffer buf = aligned_buffer(kRegion);
  auto got = store->get(key_of(3), {buf.get(), kRegion});
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, 500u);
  EXPECT_EQ(std::memcmp(buf.get(), payload_of(103, 500).data(), 500), 0);
  ASSERT_TRUE(store->erase(key_of(4)));
  EXPECT_FALSE(store->contains(key_of(4)));
  EXPECT_EQ(store->get(key_of(4), {buf.get(), kRegion}).outcome, KvStatus::kNotFound);
  EXPECT_EQ(store->erase(key_of(4)), KvStatus::kNotFound);
  EXPECT_EQ(store->put(key_of(1000), kNs, payload_of(0, kRegion)).outcome, KvStatus::kTooLarge);
}

TEST_P(SsdStoreTest, RestartRecoversSealedRegionsOverwritesAndErases) {
  constexpr std::uint32_t kCount = 20;
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
    ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, kCount));
    ASSERT_TRUE(store->put(key_of(5), kNs, payload_of(5, 3000)));  // a shorter new value
    ASSERT_TRUE(store->erase(key_of(6)));
    ASSERT_TRUE(store->close());
    EXPECT_EQ(store->durable_sequence(), kCount + 2u);
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(store->stats().recovered_entries, kCount - 1);
  EXPECT_EQ(store->stats().damaged_regions, 0u);
  EXPECT_EQ(store->stats().corrupt_dropped, 0u);
  for (std::uint32_t i = 0; i < kCount; ++i) {
    if (i == 5 || i == 6) continue;
    expect_entry(*store, i);
  }
  expect_entry(*store, 5, 3000);  // the newer value wins
  EXPECT_FALSE(store->contains(key_of(6)));
  // New writes continue after the recovered ones: sequences keep growing.
  auto seq = store->put(key_of(50), kNs, payload_of(50));
  ASSERT_TRUE(seq);
  EXPECT_EQ(*seq, kCount + 3u);
}

TEST_P(SsdStoreTest, PerCommitAcknowledgedPutsSurviveWithoutClose) {
  constexpr std::uint32_t kCount = 11;  // the last region stays open (2 entries)
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit));
    for (std::uint32_t i = 0; i < kCount; ++i) {
      auto seq = store->put(key_of(i), kNs, payload_of(i));
      ASSERT_TRUE(seq);
      EXPECT_EQ(store->durable_sequence(), *seq) << "acknowledged = durable under per-commit";
    }
    // Dropped without close(): the open region's header is never sealed.
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit));
  EXPECT_EQ(store->size(), kCount);
  EXPECT_EQ(store->stats().corrupt_dropped, 0u);
  for (std::uint32_t i = 0; i < kCount; ++i) expect_entry(*store, i);
}

TEST_P(SsdStoreTest, PerRegionUnsealedPutsAreNotAcknowledged) {
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
    ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, 8));
    ASSERT_TRUE(store->wait_for_writes());
    EXPECT_EQ(store->durable_sequence(), 6u);
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(store->size(), 6u);
  for (std::uint32_t i = 0; i < 6; ++i) expect_entry(*store, i);
}

TEST_P(SsdStoreTest, TornLastWriteKeepsEverythingBefore) {
  constexpr std::uint32_t kCount = 8;  // entries 6 and 7 in the open region 2
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit));
    ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, kCount));
  }
  // The last entry's payload only half made it.
  scribble(entry_offset(kCount - 1) + kSsdBlockBytes + 4096, 4096, std::byte{0});
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit));
    EXPECT_EQ(store->size(), kCount - 1);
    EXPECT_EQ(store->stats().corrupt_dropped, 1u);
    EXPECT_FALSE(store->contains(key_of(kCount - 1)));
    for (std::uint32_t i = 0; i + 1 < kCount; ++i) expect_entry(*store, i);
  }
  // Now the header block of entry 6 is torn too: the walk stops there.
  scribble(entry_offset(kCount - 2) + 40, 16, std::byte{0x5A});
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit));
  EXPECT_EQ(store->size(), kCount - 2);
  EXPECT_GE(store->stats().damaged_regions, 1u);
  EXPECT_FALSE(store->contains(key_of(kCount - 2)));
  for (std::uint32_t i = 0; i + 2 < kCount; ++i) expect_entry(*store, i);
  // The store keeps working after damage.
  ASSERT_TRUE(store->put(key_of(70), kNs, payload_of(70)));
  expect_entry(*store, 70);
}

TEST_P(SsdStoreTest, BitFlipFailsThatGetOnly) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  ASSERT_NO_FATAL_FAILURE(put_on_device(*store, 9));
  flip_payload_byte(4, 777);
  Buffer buf = aligned_buffer(kRegion);
  auto got = store->get(key_of(4), {buf.get(), kRegion});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.outcome, KvStatus::kChecksumError);
  EXPECT_FALSE(store->contains(key_of(4)));
  EXPECT_EQ(store->stats().corrupt_dropped, 1u);
  for (std::uint32_t i = 0; i < 9; ++i) {
    if (i != 4) expect_entry(*store, i);
  }
  store.reset();
  // The scan at open drops it as well.
  STORE_OR_SKIP(again, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(again->stats().corrupt_dropped, 1u);
  EXPECT_EQ(again->size(), 8u);
  EXPECT_FALSE(again->contains(key_of(4)));
}

TEST_P(SsdStoreTest, InjectedIoErrorAndShortReadFailOnlyThatGet) {
  // Ops: 16 header reads at open, the seal of region 0 at the 4th put, the
  // flush of region 1; then the first get is op 19 and fails.
  testing::FaultPlan plan;
  plan.fail_nth_op = kRegions + 3;
  STORE_OR_SKIP(store, open_faulty(plan, SsdSyncPolicy::kPerRegion));
  testing::FaultyBlockDevice* faulty = faulty_;
  ASSERT_NO_FATAL_FAILURE(put_on_device(*store, 6));
  ASSERT_EQ(faulty->inner().stats().reads + faulty->inner().stats().writes, kRegions + 2u);
  Buffer buf = aligned_buffer(kRegion);
  auto got = store->get(key_of(0), {buf.get(), kRegion});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.outcome, KvOutcome::device_error(EIO));
  EXPECT_EQ(faulty->injected(), 1u);
  EXPECT_FALSE(store->contains(key_of(0)));
  EXPECT_EQ(store->stats().read_errors, 1u);
  for (std::uint32_t i = 1; i < 6; ++i) expect_entry(*store, i);
  ASSERT_TRUE(store->put(key_of(60), kNs, payload_of(60)));
  expect_entry(*store, 60);
  store.reset();

  // Short reads: every read is cut to one block. Header reads at open and
  // one-block payloads pass; a longer payload read comes back short.
  ::unlink(path_.c_str());
  testing::FaultPlan cut;
  cut.short_read_bytes = kSsdBlockBytes;
  STORE_OR_SKIP(store2, open_faulty(cut, SsdSyncPolicy::kPerRegion));
  ASSERT_TRUE(store2->put(key_of(1), kNs, payload_of(1)));
  ASSERT_TRUE(store2->put(key_of(2), kNs, payload_of(2, 4000)));
  ASSERT_TRUE(store2->flush());
  std::vector<SsdGetRequest> requests{{key_of(1), {buf.get(), kRegion}, 1}};
  ASSERT_EQ(store2->submit_gets(requests), 1u);
  std::vector<SsdGetCompletion> out(1);
  ASSERT_EQ(store2->poll_gets(out, 1).value(), 1u);
  EXPECT_EQ(out[0].outcome, KvOutcome::device_error(EIO)) << "a short read";
  EXPECT_FALSE(store2->contains(key_of(1)));
  expect_entry(*store2, 2, 4000);
  EXPECT_EQ(store2->stats().read_errors, 1u);
}

TEST_P(SsdStoreTest, DeviceFullEvictsOldestRegionAndReinsertsHotEntries) {
  constexpr std::uint32_t kMaxRegions = 4;
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion, kMaxRegions));
    EXPECT_EQ(store->region_count(), kMaxRegions);
    for (std::uint32_t i = 0; i < kMaxRegions * kEntriesPerRegion; ++i) {
      ASSERT_TRUE(store->put(key_of(i), kNs, payload_of(i)));
    }
    EXPECT_EQ(store->stats().regions_evicted, 0u);
    expect_entry(*store, 1);  // entry 1 (region 0) is now hot
    ASSERT_TRUE(store->put(key_of(100), kNs, payload_of(100)));
    EXPECT_EQ(store->stats().regions_evicted, 1u);
    EXPECT_EQ(store->stats().entries_evicted, 3u);
    EXPECT_EQ(store->stats().reinsertions, 1u);
    EXPECT_FALSE(store->contains(key_of(0)));
    EXPECT_FALSE(store->contains(key_of(2)));
    EXPECT_TRUE(store->contains(key_of(1)));
    expect_entry(*store, 1);  // read again after its reinsertion: still hot
    EXPECT_TRUE(store->contains(key_of(100)));
    for (std::uint32_t i = 3; i < kMaxRegions * kEntriesPerRegion; ++i) EXPECT_TRUE(store->contains(key_of(i)));
    // Region 0 now holds 1 and 100. Fill on until region 0 is evicted again:
    // 1 (read since its reinsertion) survives another lap, 100 and 200 (never
    // read) do not.
    ASSERT_NO_FATAL_FAILURE(put_entries(*store, 200, 211));
    EXPECT_EQ(store->stats().regions_evicted, 5u);
    EXPECT_EQ(store->stats().reinsertions, 2u);
    EXPECT_TRUE(store->contains(key_of(1)));
    EXPECT_FALSE(store->contains(key_of(100)));
    EXPECT_FALSE(store->contains(key_of(200)));
    for (std::uint32_t i = 3; i < kMaxRegions * kEntriesPerRegion; ++i) EXPECT_FALSE(store->contains(key_of(i)));
    ASSERT_TRUE(store->close());
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion, kMaxRegions));
  EXPECT_EQ(store->stats().corrupt_dropped, 0u);
  EXPECT_EQ(store->size(), 11u);
  expect_entry(*store, 1);
  EXPECT_FALSE(store->contains(key_of(0)));
  EXPECT_FALSE(store->contains(key_of(100)));
  EXPECT_FALSE(store->contains(key_of(200)));
  for (std::uint32_t i = 201; i <= 210; ++i) expect_entry(*store, i);
}

TEST_P(SsdStoreTest, PerCommitEvictionAndCrashKeepIndexAndDiskInAgreement) {
  constexpr std::uint32_t kMaxRegions = 3;
  std::vector<std::uint32_t> held;
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit, kMaxRegions));
    for (std::uint32_t i = 0; i < 25; ++i) {
      ASSERT_TRUE(store->put(key_of(i), kNs, payload_of(i)));
      if (i % 4 == 0) expect_entry(*store, i);  // some entries are hot
    }
    EXPECT_GT(store->stats().regions_evicted, 0u);
    EXPECT_GT(store->stats().reinsertions, 0u);
    ASSERT_TRUE(store->erase(key_of(24)));
    for (std::uint32_t i = 0; i < 25; ++i) {
      if (store->contains(key_of(i))) held.push_back(i);
    }
    // Dropped without close(), as a crash would.
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit, kMaxRegions));
  EXPECT_EQ(store->stats().corrupt_dropped, 0u);
  EXPECT_EQ(store->size(), held.size());
  for (std::uint32_t i : held) expect_entry(*store, i);
  EXPECT_FALSE(store->contains(key_of(24)));
}

TEST_P(SsdStoreTest, FullIndexEvictsOldestRegions) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion, 0, 4));
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, 4));
  // Region 0 (keys 0-2) goes to make room for key 4.
  ASSERT_TRUE(store->put(key_of(4), kNs, payload_of(4)));
  EXPECT_EQ(store->size(), 2u);
  EXPECT_FALSE(store->contains(key_of(0)));
  expect_entry(*store, 3);
  expect_entry(*store, 4);
  // Replacing a key needs no room.
  ASSERT_TRUE(store->put(key_of(4), kNs, payload_of(4)));
  EXPECT_EQ(store->stats().regions_evicted, 1u);
  ASSERT_TRUE(store->put(key_of(5), kNs, payload_of(5)));  // seals region 1 (3, 4, 4)
  ASSERT_TRUE(store->put(key_of(6), kNs, payload_of(6)));
  EXPECT_EQ(store->size(), 4u);
  ASSERT_TRUE(store->put(key_of(7), kNs, payload_of(7)));  // evicts region 1
  EXPECT_EQ(store->stats().regions_evicted, 2u);
  EXPECT_EQ(store->size(), 3u);
  EXPECT_FALSE(store->contains(key_of(3)));
  for (std::uint32_t i = 5; i <= 7; ++i) expect_entry(*store, i);
}

TEST_P(SsdStoreTest, FullIndexWithEveryKeyInTheOpenRegionIsRejected) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion, 0, 2));
  ASSERT_TRUE(store->put(key_of(0), kNs, payload_of(0, 100)));
  ASSERT_TRUE(store->put(key_of(1), kNs, payload_of(1, 100)));
  EXPECT_EQ(store->put(key_of(2), kNs, payload_of(2, 100)).outcome, KvStatus::kRejected);
  expect_entry(*store, 0, 100);
  expect_entry(*store, 1, 100);
}

// The listener hears of exactly the keys that leave the index on their own
// (region eviction, index room), never of erases or reinserted hot entries.
TEST_P(SsdStoreTest, EvictionListenerNamesEveryKeyThatLeavesOnItsOwn) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion, 4));
  std::vector<ChunkKey> evicted;
  store->set_eviction_listener([&](const ChunkKey& k) { evicted.push_back(k); });
  ASSERT_NO_FATAL_FAILURE(put_entries(*store, 0, 4 * kEntriesPerRegion));
  ASSERT_TRUE(store->erase(key_of(5)));
  expect_entry(*store, 1);  // hot: reinserted, not evicted
  EXPECT_TRUE(evicted.empty());
  ASSERT_TRUE(store->put(key_of(100), kNs, payload_of(100)));
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[0], key_of(0));
  EXPECT_EQ(evicted[1], key_of(2));
  for (const ChunkKey& k : evicted) EXPECT_FALSE(store->contains(k));
  // Lowering the index capacity evicts whole regions at the next put.
  evicted.clear();
  const std::size_t before = store->size();
  store->set_index_capacity(before - 1);
  ASSERT_TRUE(store->put(key_of(300), kNs, payload_of(300)));
  EXPECT_FALSE(evicted.empty());
  EXPECT_EQ(store->size() + evicted.size(), before + 1);
  for (const ChunkKey& k : evicted) EXPECT_FALSE(store->contains(k));
}

TEST_P(SsdStoreTest, EraseNamespaceWritesTombstonesThatSurviveRestart) {
  const NamespaceFingerprint other{7, 7};
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
    for (std::uint32_t i = 0; i < 6; ++i) ASSERT_TRUE(store->put(key_of(i), i % 2 ? other : kNs, payload_of(i)));
    ASSERT_TRUE(store->flush());
    auto erased = store->erase_namespace(other);
    ASSERT_TRUE(erased);
    EXPECT_EQ(*erased, 3u);
    EXPECT_EQ(store->size(), 3u);
    auto none = store->erase_namespace(NamespaceFingerprint{9, 9});
    ASSERT_TRUE(none);
    EXPECT_EQ(*none, 0u);
    ASSERT_TRUE(store->close());
  }
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  std::vector<SsdEntryInfo> seen;
  store->for_each_entry([&](const SsdEntryInfo& e) { seen.push_back(e); });
  ASSERT_EQ(seen.size(), 3u);
  for (const SsdEntryInfo& e : seen) {
    EXPECT_EQ(e.ns, kNs);
    EXPECT_EQ(e.payload_bytes, kPayload);
    EXPECT_GT(e.sequence, 0u);
    EXPECT_EQ(e.key.hi % 2, 1u) << "even i (hi = i + 1 odd) were in kNs";
  }
  EXPECT_GT(store->regions_in_use(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Drivers, SsdStoreTest, all_drivers(), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache
