// SPDX-License-Identifier: Apache-2.0
// SsdStore::put_lent: a payload written to the device straight from the
// caller's memory leaves the same bytes on the device as a copied put, is
// served from that memory until its region's write completes, and the memory
// is handed back exactly once: when the write completes, when it fails (the
// region's entries dropped), or when the store is destroyed.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/common/crc32c.hpp"
#include "ssd_store_fixture.hpp"

namespace cxlpool::kvcache {
namespace {

using namespace ssd_test;  // NOLINT(google-build-using-namespace): the fixture's vocabulary

// Whole blocks, so the payload can be lent: extent 16 KiB, 3 per region.
constexpr std::uint32_t kLentPayload = 12288;
constexpr std::uint32_t kEntries = 4;  // region 0 full (3) + one in region 1
// Region 0's writes: region header with entry 0's header, then each lent
// payload, and the next entry's header between them.
constexpr std::size_t kRegion0Writes = 6;

class SsdStoreLentTest : public SsdStoreTest {
 protected:
  void SetUp() override {
    SsdStoreTest::SetUp();
    memory_ = aligned_buffer(std::size_t{kEntries} * kLentPayload);
    for (std::uint32_t i = 0; i < kEntries; ++i) {
      const auto p = payload_of(i, kLentPayload);
      std::memcpy(lent_memory(i), p.data(), kLentPayload);
    }
  }

  std::byte* lent_memory(std::uint32_t i) { return memory_.get() + std::size_t{i} * kLentPayload; }

  void listen(SsdStore& store) {
    store.set_lend_listener([this](std::uint64_t token) { returned_.push_back(token); });
  }

  // put_lent of entries [0, kEntries) from lent_memory, token = index.
  void put_all(SsdStore& store) {
    for (std::uint32_t i = 0; i < kEntries; ++i) {
      SsdLentPayload p;
      p.bytes = {lent_memory(i), kLentPayload};
      p.token = i;
      auto lent = store.put_lent(key_of(i), kNs, p);
      ASSERT_EQ(lent.outcome, KvStatus::kOk);
      EXPECT_TRUE(*lent) << "entry " << i << " was copied";
    }
  }

  // A payload of lent_memory(i) that its owner may still change, with the
  // CRC of what it holds now: token i.
  SsdLentPayload checked(std::uint32_t i) {
    SsdLentPayload p;
    p.bytes = {lent_memory(i), kLentPayload};
    p.token = i;
    p.crc = crc32c(p.bytes);
    p.check_copies = true;
    return p;
  }

  // Hands out every held write that lands in region `region`.
  void release_region(std::uint32_t region) {
    for (std::size_t i = faulty_->held(); i > 0; --i) {
      if (faulty_->held_offset(i - 1) / kRegion == region) faulty_->release_held(i - 1);
    }
  }

  std::vector<std::byte> file_bytes(std::uint64_t offset, std::size_t length) const {
    std::vector<std::byte> bytes(length);
    const int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::pread(fd, bytes.data(), length, static_cast<off_t>(offset)), static_cast<ssize_t>(length));
    ::close(fd);
    return bytes;
  }

  Buffer memory_;
  std::vector<std::uint64_t> returned_;
};

TEST_P(SsdStoreLentTest, LeavesTheSameBytesOnTheDeviceAsACopiedPut) {
  std::vector<std::byte> copied;
  {
    STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
    for (std::uint32_t i = 0; i < kEntries; ++i) {
      ASSERT_TRUE(store->put(key_of(i), kNs, {lent_memory(i), kLentPayload}));
    }
    ASSERT_TRUE(store->flush());
    EXPECT_EQ(store->stats().lent_puts, 0u);
    copied = file_bytes(0, 2 * kRegion);
  }
  ::unlink(path_.c_str());
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  listen(*store);
  put_all(*store);
  ASSERT_TRUE(store->flush());
  EXPECT_EQ(store->stats().lent_puts, kEntries);
  EXPECT_EQ(store->lent(), 0u);
  std::sort(returned_.begin(), returned_.end());
  EXPECT_EQ(returned_, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  const auto lent = file_bytes(0, 2 * kRegion);
  EXPECT_TRUE(lent == copied) << "the device image differs from the copied puts'";

  // A restart's scan finds every entry, CRC-checked.
  store.reset();
  STORE_OR_SKIP(reopened, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_EQ(reopened->stats().recovered_entries, kEntries);
  for (std::uint32_t i = 0; i < kEntries; ++i) expect_entry(*reopened, i, kLentPayload);
}

TEST_P(SsdStoreLentTest, GetOfAnEntryBeingWrittenIsServedFromTheLentMemory) {
  STORE_OR_SKIP(store, open_held());
  listen(*store);
  put_all(*store);
  // Region 0 (3 entries) is sealed; its writes are held back.
  poll_until(*store, [&] { return faulty_->held() == kRegion0Writes; });
  EXPECT_EQ(store->writes_in_flight(), 1u);
  EXPECT_EQ(store->lent(), kEntries);
  EXPECT_TRUE(returned_.empty());
  const std::uint64_t reads_before = faulty_->inner().stats().reads;
  for (std::uint32_t i = 0; i < kEntries; ++i) expect_entry(*store, i, kLentPayload);
  EXPECT_EQ(faulty_->inner().stats().reads, reads_before) << "served from the device, not the lent memory";
  EXPECT_EQ(store->stats().buffer_reads, kEntries);

  // Once region 0 is written its memory comes back, and its entries are read
  // from the device: the old contents of the memory no longer matter.
  release_region(0);
  poll_until(*store, [&] { return returned_.size() == 3; });
  std::sort(returned_.begin(), returned_.end());
  EXPECT_EQ(returned_, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(store->lent(), 1u);
  for (std::uint32_t i = 0; i < 3; ++i) std::memset(lent_memory(i), 0xEE, kLentPayload);
  for (std::uint32_t i = 0; i < 3; ++i) expect_entry(*store, i, kLentPayload);
  EXPECT_GT(faulty_->inner().stats().reads, reads_before);
  ASSERT_TRUE(store->flush());
  EXPECT_EQ(returned_.size(), kEntries);
  EXPECT_EQ(store->durable_sequence(), kEntries);
}

TEST_P(SsdStoreLentTest, FailedWriteOfALentPayloadDropsItsRegionAndHandsTheMemoryBack) {
  FaultPlan plan;
  // Data operations: 16 region-header reads at open, then region 0's writes:
  // the headers' piece first, then entry 0's payload from the lent memory.
  plan.fail_nth_op = kRegions + 2;
  STORE_OR_SKIP(store, open_held(plan));
  listen(*store);
  put_all(*store);
  poll_until(*store, [&] { return faulty_->injected() == 1 && faulty_->held() == kRegion0Writes - 1; });
  EXPECT_TRUE(returned_.empty()) << "handed back while other pieces were still on the device";
  release_region(0);
  poll_until(*store, [&] { return returned_.size() == 3; });
  EXPECT_EQ(store->stats().write_dropped, 3u);
  EXPECT_EQ(store->writes_in_flight(), 0u);
  Buffer buf = aligned_buffer(kRegion);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(store->contains(key_of(i)));
    EXPECT_EQ(store->get(key_of(i), {buf.get(), kRegion}).outcome, KvStatus::kNotFound);
  }
  expect_entry(*store, 3, kLentPayload);  // region 1, still filling
  EXPECT_FALSE(store->flush());           // the failure is reported
  EXPECT_EQ(returned_.size(), kEntries);
  EXPECT_EQ(store->lent(), 0u);
}

TEST_P(SsdStoreLentTest, DestroyingTheStoreWaitsForLentWritesAndHandsEverythingBack) {
  STORE_OR_SKIP(store, open_held());
  listen(*store);
  put_all(*store);
  poll_until(*store, [&] { return faulty_->held() == kRegion0Writes; });
  EXPECT_TRUE(returned_.empty());
  store.reset();  // waits for region 0's held writes; region 1 was never sealed
  std::sort(returned_.begin(), returned_.end());
  EXPECT_EQ(returned_, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  STORE_OR_SKIP(reopened, open_store(device(), SsdSyncPolicy::kPerRegion));
  for (std::uint32_t i = 0; i < 3; ++i) expect_entry(*reopened, i, kLentPayload);
  EXPECT_FALSE(reopened->contains(key_of(3)));
}

TEST_P(SsdStoreLentTest, PayloadsThatCannotBeLentAreCopied) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  listen(*store);
  const auto odd = payload_of(9);  // 9000 bytes: not whole blocks
  SsdLentPayload p;
  p.bytes = odd;
  auto lent = store->put_lent(key_of(9), kNs, p);
  ASSERT_TRUE(lent);
  EXPECT_FALSE(*lent);
  expect_entry(*store, 9);
  ASSERT_TRUE(store->flush());
  EXPECT_TRUE(returned_.empty());
  EXPECT_EQ(store->stats().lent_puts, 0u);
}

TEST_P(SsdStoreLentTest, PerCommitPolicyCopies) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerCommit));
  listen(*store);
  SsdLentPayload p;
  p.bytes = {lent_memory(0), kLentPayload};
  auto lent = store->put_lent(key_of(0), kNs, p);
  ASSERT_TRUE(lent);
  EXPECT_FALSE(*lent);
  std::memset(lent_memory(0), 0xEE, kLentPayload);
  expect_entry(*store, 0, kLentPayload);
  EXPECT_TRUE(returned_.empty());
}

// A payload whose owner may still write it (a client's put window): a copy
// from it that no longer matches the CRC taken at the put is refused, the
// entry dropped and the get answered as a miss (counted apart from device
// damage); one that matches serves.
TEST_P(SsdStoreLentTest, CheckedPayloadChangedByItsOwnerIsNeverServed) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  listen(*store);
  for (std::uint32_t i = 0; i < 2; ++i) ASSERT_TRUE(*store->put_lent(key_of(i), kNs, checked(i)));
  std::memset(lent_memory(1) + 100, 0xEE, 8);  // the owner writes after the put
  expect_entry(*store, 0, kLentPayload);
  auto buffer = aligned_buffer(kLentPayload);
  EXPECT_EQ(store->get(key_of(1), {buffer.get(), kLentPayload}).outcome, KvStatus::kNotFound);
  EXPECT_FALSE(store->contains(key_of(1)));
  EXPECT_EQ(store->stats().lent_changed, 1u);
  EXPECT_EQ(store->stats().corrupt_dropped, 0u) << "the device is not at fault";
  // The region still goes out and hands both payloads back.
  ASSERT_TRUE(store->flush());
  std::sort(returned_.begin(), returned_.end());
  EXPECT_EQ(returned_, (std::vector<std::uint64_t>{0, 1}));
  expect_entry(*store, 0, kLentPayload);
  // A restart finds the changed entry's tombstone, not the entry.
  store.reset();
  STORE_OR_SKIP(reopened, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_FALSE(reopened->contains(key_of(1)));
  expect_entry(*reopened, 0, kLentPayload);
}

TEST_P(SsdStoreLentTest, CheckedPayloadNeedsItsCrc) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  SsdLentPayload p = checked(0);
  p.crc.reset();
  EXPECT_EQ(store->put_lent(key_of(0), kNs, p).outcome, KvStatus::kInvalid);
  EXPECT_FALSE(store->contains(key_of(0)));
}

// reclaim_lent copies chosen payloads of the open region into its buffer and
// hands their memory back at once; the region is written as before, and a
// checked payload that changed meanwhile is dropped, not written as valid.
TEST_P(SsdStoreLentTest, ReclaimedPayloadsComeBackAtOnceAndStayServed) {
  STORE_OR_SKIP(store, open_store(device(), SsdSyncPolicy::kPerRegion));
  listen(*store);
  const auto all = [](std::uint64_t) { return true; };
  EXPECT_EQ(store->reclaim_lent(all), 0u) << "no region open";
  const auto older = payload_of(2, kLentPayload);
  ASSERT_TRUE(store->put(key_of(2), kNs, older));  // an older value of entry 2, in region 0
  ASSERT_TRUE(store->flush());
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(*store->put_lent(key_of(i), kNs, checked(i)));
  EXPECT_EQ(store->open_lent(all), 3u);
  EXPECT_EQ(store->open_lent([](std::uint64_t t) { return t == 1; }), 1u);
  std::memset(lent_memory(2), 0xEE, 64);  // changed before it was reclaimed
  EXPECT_EQ(store->reclaim_lent([](std::uint64_t t) { return t != 1; }), 2u);
  std::sort(returned_.begin(), returned_.end());
  EXPECT_EQ(returned_, (std::vector<std::uint64_t>{0, 2}));
  EXPECT_EQ(store->lent(), 1u);
  EXPECT_EQ(store->open_lent(all), 1u);
  EXPECT_EQ(store->stats().lent_reclaimed, 2u);
  EXPECT_EQ(store->stats().lent_changed, 1u);
  EXPECT_FALSE(store->contains(key_of(2)));
  std::memset(lent_memory(0), 0xEE, kLentPayload);  // its memory is the owner's again
  expect_entry(*store, 0, kLentPayload);
  ASSERT_TRUE(store->flush());
  EXPECT_EQ(returned_.size(), 3u);
  expect_entry(*store, 0, kLentPayload);
  expect_entry(*store, 1, kLentPayload);
  EXPECT_EQ(store->stats().corrupt_dropped, 0u);
  // Entry 2 had an older, valid value: after a restart it stays deleted.
  store.reset();
  STORE_OR_SKIP(reopened, open_store(device(), SsdSyncPolicy::kPerRegion));
  EXPECT_FALSE(reopened->contains(key_of(2)));
  expect_entry(*reopened, 0, kLentPayload);
  expect_entry(*reopened, 1, kLentPayload);
}

INSTANTIATE_TEST_SUITE_P(Drivers, SsdStoreLentTest, all_drivers(), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache
