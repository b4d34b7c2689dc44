// SPDX-License-Identifier: Apache-2.0
// Every status the SSD log's data-path calls answer with, produced where it
// is expected: a key not stored is kNotFound, a buffer that cannot take the
// payload kInvalid, a payload larger than a region kTooLarge, a full index
// kRejected, a damaged record kChecksumError, and a failure injected by the
// fault-injecting device kDeviceError carrying the device's errno.
#include <cerrno>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "ssd_store_fixture.hpp"

namespace cxlpool::kvcache {
namespace {

using namespace ssd_test;  // NOLINT(google-build-using-namespace): the fixture's vocabulary

class SsdStoreOutcomeTest : public SsdStoreTest {
 protected:
  // A store whose device fails its `nth_op`th data operation with `err`.
  std::unique_ptr<SsdStore> open_failing(std::uint64_t nth_op, int err, SsdSyncPolicy sync) {
    FaultPlan plan;
    plan.fail_nth_op = nth_op;
    plan.fail_errno = err;
    return open_faulty(plan, sync);
  }

  // Submits one batched get and returns its completion.
  SsdGetCompletion get_batched(SsdStore& store, const ChunkKey& key, std::span<std::byte> buffer) {
    const std::vector<SsdGetRequest> requests{{key, buffer, 42}};
    EXPECT_EQ(store.submit_gets(requests), 1u);
    std::vector<SsdGetCompletion> out(1);
    auto got = store.poll_gets(out, 1);
    EXPECT_TRUE(got && *got == 1u);
    EXPECT_EQ(out[0].user_data, 42u);
    return out[0];
  }
};

TEST_P(SsdStoreOutcomeTest, AKeyNotStoredIsNotFound) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  ASSERT_TRUE(store->put(key_of(0), kNs, payload_of(0)));
  Buffer buf = aligned_buffer(kRegion);
  EXPECT_EQ(store->get(key_of(1), {buf.get(), kRegion}).outcome, KvStatus::kNotFound);
  const SsdGetCompletion batched = get_batched(*store, key_of(1), {buf.get(), kRegion});
  EXPECT_EQ(batched.outcome, KvStatus::kNotFound);
  EXPECT_EQ(batched.payload_bytes, 0u);
  EXPECT_EQ(store->erase(key_of(1)), KvStatus::kNotFound);
  EXPECT_EQ(store->stats().misses, 2u);
  ASSERT_EQ(store->erase(key_of(0)), KvStatus::kOk);
  EXPECT_EQ(store->get(key_of(0), {buf.get(), kRegion}).outcome, KvStatus::kNotFound) << "erased";
}

TEST_P(SsdStoreOutcomeTest, ABufferThatCannotTakeThePayloadIsInvalid) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  ASSERT_TRUE(store->put(key_of(0), kNs, payload_of(0)));
  Buffer buf = aligned_buffer(kRegion);
  EXPECT_EQ(store->get(key_of(0), {buf.get(), kPayload}).outcome, KvStatus::kInvalid) << "not padded";
  EXPECT_EQ(get_batched(*store, key_of(0), {buf.get() + 8, kRegion - 8}).outcome, KvStatus::kInvalid)
      << "misaligned";
  EXPECT_TRUE(store->contains(key_of(0))) << "the entry is fine";
  expect_entry(*store, 0);
}

TEST_P(SsdStoreOutcomeTest, APayloadLargerThanARegionIsTooLarge) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  const auto big = payload_of(1, kRegion);
  EXPECT_EQ(store->put(key_of(1), kNs, big).outcome, KvStatus::kTooLarge);
  SsdLentPayload lent;
  lent.bytes = big;
  EXPECT_EQ(store->put_lent(key_of(1), kNs, lent).outcome, KvStatus::kTooLarge);
  EXPECT_FALSE(store->contains(key_of(1)));
  EXPECT_EQ(store->stats().puts, 0u);
}

TEST_P(SsdStoreOutcomeTest, AFullIndexRejectsNewKeysButTakesNewValues) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion, 0, 2));
  ASSERT_TRUE(store->put(key_of(0), kNs, payload_of(0, 100)));
  ASSERT_TRUE(store->put(key_of(1), kNs, payload_of(1, 100)));
  EXPECT_EQ(store->put(key_of(2), kNs, payload_of(2, 100)).outcome, KvStatus::kRejected);
  SsdLentPayload lent;
  const auto bytes = payload_of(2, 100);
  lent.bytes = bytes;
  EXPECT_EQ(store->put_lent(key_of(2), kNs, lent).outcome, KvStatus::kRejected);
  EXPECT_EQ(store->put(key_of(1), kNs, payload_of(11, 100)).outcome, KvStatus::kOk) << "a key already stored";
  EXPECT_FALSE(store->contains(key_of(2)));
}

TEST_P(SsdStoreOutcomeTest, ADamagedRecordIsAChecksumErrorAndIsDropped) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  ASSERT_NO_FATAL_FAILURE(put_on_device(*store, 3));
  flip_payload_byte(1, 4000);
  Buffer buf = aligned_buffer(kRegion);
  const SsdGetCompletion done = get_batched(*store, key_of(1), {buf.get(), kRegion});
  EXPECT_EQ(done.outcome, KvStatus::kChecksumError);
  EXPECT_EQ(store->stats().corrupt_dropped, 1u);
  EXPECT_EQ(store->stats().read_errors, 0u) << "a checksum error is not a device error";
  EXPECT_EQ(store->get(key_of(1), {buf.get(), kRegion}).outcome, KvStatus::kNotFound) << "dropped";
  expect_entry(*store, 0);
  expect_entry(*store, 2);
}

TEST_P(SsdStoreOutcomeTest, AFailedReadIsADeviceErrorWithTheDevicesErrno) {
  // Ops: 16 header reads at open, the seal of region 0 at the 4th put, the
  // flush of region 1; then the get's read fails.
  STORE_OR_SKIP(store, open_failing(kRegions + 3, EROFS, SsdSyncPolicy::kPerRegion));
  ASSERT_NO_FATAL_FAILURE(put_on_device(*store, 6));
  Buffer buf = aligned_buffer(kRegion);
  const KvResult<std::uint32_t> got = store->get(key_of(0), {buf.get(), kRegion});
  EXPECT_EQ(got.outcome, KvOutcome::device_error(EROFS));
  EXPECT_EQ(to_errno(got.outcome), EROFS);
  EXPECT_EQ(store->stats().read_errors, 1u);
  EXPECT_FALSE(store->contains(key_of(0)));
  expect_entry(*store, 1);
}

TEST_P(SsdStoreOutcomeTest, AFailedCommitIsADeviceErrorAndStoresNothing) {
  // Ops: 16 header reads at open, the region's header block, then the
  // entry's write fails.
  STORE_OR_SKIP(store, open_failing(kRegions + 2, EIO, SsdSyncPolicy::kPerCommit));
  const KvResult<std::uint64_t> put = store->put(key_of(0), kNs, payload_of(0));
  EXPECT_EQ(put.outcome, KvOutcome::device_error(EIO));
  EXPECT_FALSE(store->contains(key_of(0)));
  EXPECT_EQ(store->stats().write_errors, 1u);
  // The log goes on in the next region.
  ASSERT_EQ(store->put(key_of(1), kNs, payload_of(1)).outcome, KvStatus::kOk);
  expect_entry(*store, 1);
}

TEST_P(SsdStoreOutcomeTest, AFailedTombstoneIsADeviceError) {
  // Ops: 16 header reads, the region's header block, the put's entry, then
  // the tombstone's write fails.
  STORE_OR_SKIP(store, open_failing(kRegions + 3, ENOSPC, SsdSyncPolicy::kPerCommit));
  ASSERT_EQ(store->put(key_of(0), kNs, payload_of(0)).outcome, KvStatus::kOk);
  EXPECT_EQ(store->erase(key_of(0)), KvOutcome::device_error(ENOSPC));
}

INSTANTIATE_TEST_SUITE_P(Drivers, SsdStoreOutcomeTest, all_drivers(),
                         driver_name);

}  // namespace
}  // namespace cxlpool::kvcache
