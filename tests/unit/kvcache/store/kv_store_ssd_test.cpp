// SPDX-License-Identifier: Apache-2.0
// KvStore with an SSD log on a file, over both block drivers: gets and
// prefetches read SSD chunks into DRAM slots asynchronously, injected I/O
// errors and short reads fail the get without poisoning the index, restart
// recovery, per-commit write-through, namespace drop on SSD, and the
// statuses of reads and writes that fail (kChecksumError, kDeviceError with
// the device's errno).
#include <poll.h>
#include <unistd.h>

#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

class KvStoreSsd : public KvStoreOverSsd {
 protected:
  // Two DRAM slots, no CXL, every demoted chunk admitted to SSD.
  HarnessOptions options() const { return ssd_options(GetParam(), 2); }
  // Puts `keys` one by one: all but the last two end up SSD-only.
  void put_each(std::span<const proto::KvKey> keys) { h_.put_each(kAlice, keys); }
  // put_each, then a flush that seals the region: reads go to the device.
  void put_on_device(std::span<const proto::KvKey> keys) {
    ASSERT_NO_FATAL_FAILURE(put_each(keys));
    ASSERT_TRUE(h_.store().flush());
  }
};

TEST_P(KvStoreSsd, GetReadsSsdChunksIntoDramSlots) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(200, 4);
  put_each(keys);
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2, 0, 0}));
  ASSERT_TRUE(h_.store().flush());  // seals the region: reads now go to the device
  if (GetParam() == Driver::kUring) {
    EXPECT_GE(h_.store().completion_fd(), 0);
  } else {
    EXPECT_EQ(h_.store().completion_fd(), -1);
  }
  const std::uint64_t read_before = h_.store().counters().tiers[2].bytes_read;
  auto get = h_.call(kBob, KvOp::kGet, std::span(keys).first(2));
  ASSERT_EQ(get.outcome, KvStatus::kOk);
  EXPECT_EQ(get.completion.result1, 2u);
  ASSERT_EQ(get.locations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(get.locations[i].tier, 0u);
    EXPECT_EQ(get.locations[i].flags, proto::kKvLocationSsdCopy);
    EXPECT_TRUE(h_.holds(get.locations[i], keys[i]));
  }
  EXPECT_GE(h_.store().counters().tiers[2].bytes_read - read_before, 2u * kChunk);
  EXPECT_EQ(h_.store().counters().tiers[0].promotions, 2u);
  // Both DRAM slots are leased: a get of SSD chunks finds no slot and
  // leases nothing (a shorter prefix, not an error).
  auto none = h_.call(kAlice, KvOp::kGet, std::span(keys).subspan(2));
  EXPECT_EQ(none.outcome, KvStatus::kOk);
  EXPECT_EQ(none.completion.result0, 0u);
  ASSERT_EQ(h_.call(kBob, KvOp::kRelease, {}, get.completion.result0).outcome, KvStatus::kOk);
  // A prefix mixing DRAM and SSD chunks is leased whole.
  auto mixed = h_.call(kAlice, KvOp::kGet, std::span(keys).subspan(1, 2));
  ASSERT_EQ(mixed.outcome, KvStatus::kOk);
  EXPECT_EQ(mixed.completion.result1, 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(h_.holds(mixed.locations[i], keys[1 + i]));
}

// What the daemon's epoll loop relies on: the device's eventfd wakes it
// when an SSD read completes, and poll() leaves it reset.
TEST_P(KvStoreSsd, CompletionEventfdWakesForSsdReads) {
  KV_OPEN_OR_SKIP(h_, options());
  const int fd = h_.store().completion_fd();
  if (GetParam() == Driver::kPosix) {
    EXPECT_EQ(fd, -1) << "posix completes reads in poll: the daemon polls while io_in_flight()";
    return;
  }
  ASSERT_GE(fd, 0);
  const auto keys = keys_of(205, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  std::vector<KvStoreCompletion> out;
  // Writes the flush started may still complete (and signal) after it
  // returns; once nothing is in flight, a poll leaves the eventfd reset.
  for (int i = 0; i < 5000 && h_.store().io_in_flight() != 0; ++i) {
    h_.store().poll(out);
    ::usleep(1000);
  }
  ASSERT_EQ(h_.store().io_in_flight(), 0u);
  h_.store().poll(out);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "poll() resets it";
  const std::uint64_t id = h_.submit(kAlice, KvOp::kGet, std::span(keys).first(1));
  if (h_.store().io_in_flight() != 0) {
    EXPECT_EQ(::poll(&p, 1, 5000), 1) << "no wake-up for a completed read";
  }
  auto get = h_.wait(kAlice, id);
  ASSERT_EQ(get.completion.result1, 1u);
  EXPECT_TRUE(h_.holds(get.locations[0], keys[0]));
  h_.store().poll(out);
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TEST_P(KvStoreSsd, PrefetchLoadsIntoDramInTheBackground) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(210, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  auto pre = h_.call(kAlice, KvOp::kPrefetch, keys);
  ASSERT_EQ(pre.outcome, KvStatus::kOk);
  EXPECT_EQ(pre.completion.result0, 2u);  // chunks 0 and 1 were SSD-only
  h_.drain();
  EXPECT_EQ(h_.tiers(std::span(keys).first(2)), (std::vector<std::uint16_t>{0, 0}));
  EXPECT_EQ(h_.store().counters().prefetches, 2u);
  auto look = h_.call(kAlice, KvOp::kLookup, keys);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(h_.holds(look.locations[i], keys[i]));
}

TEST_P(KvStoreSsd, InjectedIoErrorFailsTheGetAndDropsOnlyThatChunk) {
  // After the open: the region write at flush, then the get's read. Not
  // EIO: the device's own errno must reach the completion (and so the wire).
  HarnessOptions o = failing_after_open(options(), 2);
  o.fault.fail_errno = EROFS;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(220, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  auto bad = h_.call(kAlice, KvOp::kGet, std::span(keys).first(1));
  EXPECT_EQ(bad.outcome, KvOutcome::device_error(EROFS));
  EXPECT_EQ(to_errno(bad.outcome), EROFS);
  EXPECT_EQ(h_.outcome_count(KvStatus::kDeviceError), 1u);
  EXPECT_EQ(bad.completion.result0, 0u);
  EXPECT_EQ(h_.faulty()->injected(), 1u);
  EXPECT_EQ(h_.store().counters().leases, 0u);
  // Chunk 0 is gone from every answer; the rest still reads back. (The
  // failed read's DRAM slot displaced chunk 2, which has an SSD copy.)
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, keys).completion.result0, 0u);
  EXPECT_EQ(h_.tiers(std::span(keys).subspan(1)), (std::vector<std::uint16_t>{2, 2, 0}));
  for (std::size_t i = 1; i < 4; ++i) EXPECT_TRUE(h_.get_checked(kAlice, keys[i])) << "chunk " << i;
  EXPECT_GE(h_.store().counters().tiers[2].errors, 1u);
  expect_no_slot_leaked();  // not by the failed read either
}

// A region whose asynchronous write fails takes its chunks out of the
// index: no lookup finds them and no get serves them, the rest goes on.
TEST_P(KvStoreSsd, FailedRegionWriteDropsItsChunksFromTheIndex) {
  KV_OPEN_OR_SKIP(h_, failing_after_open(options(), 1));  // region 0's write
  // 256 KiB regions hold 15 chunks: the 16th demotion seals region 0.
  const auto keys = keys_of(225, 18);
  put_each(keys);
  h_.drain();
  EXPECT_EQ(h_.faulty()->injected(), 1u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, keys).completion.result0, 0u);
  for (std::size_t i = 0; i < 15; ++i) {
    auto miss = h_.call(kAlice, KvOp::kLookup, std::span(keys).subspan(i, 1));
    EXPECT_EQ(miss.completion.result0, 0u) << "chunk " << i << " was in the failed region";
    auto get = h_.call(kAlice, KvOp::kGet, std::span(keys).subspan(i, 1));
    EXPECT_EQ(get.outcome, KvStatus::kOk);
    EXPECT_EQ(get.completion.result1, 0u) << "chunk " << i << " served";
  }
  // Chunk 15 sits in region 1 (still filling), 16 and 17 in DRAM.
  EXPECT_EQ(h_.tiers(std::span(keys).subspan(15)), (std::vector<std::uint16_t>{2, 0, 0}));
  auto good = h_.call(kBob, KvOp::kGet, std::span(keys).subspan(15, 1));
  ASSERT_EQ(good.outcome, KvStatus::kOk);
  ASSERT_EQ(good.completion.result1, 1u);
  EXPECT_TRUE(h_.holds(good.locations[0], keys[15]));
  EXPECT_GE(h_.store().counters().tiers[2].errors, 1u);
  EXPECT_EQ(h_.store().ssd_stats()->write_dropped, 15u);
  // The failure is reported by the shutdown flush too.
  EXPECT_FALSE(h_.store().flush());
}

TEST_P(KvStoreSsd, ShortReadFailsTheGetWithoutPoisoningTheIndex) {
  HarnessOptions o = options();
  o.faulty = true;
  o.fault.short_read_bytes = 4096;  // headers read whole, chunks cut short
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(230, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  auto bad = h_.call(kAlice, KvOp::kGet, std::span(keys).first(2));
  EXPECT_EQ(bad.outcome, KvOutcome::device_error(EIO));
  EXPECT_EQ(h_.store().counters().leases, 0u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, keys).completion.result0, 0u);
  expect_no_slot_leaked();
  // The two reads took both DRAM slots, displacing chunks 2 and 3 (they
  // have SSD copies): still indexed until a read of theirs fails too.
  EXPECT_EQ(h_.tiers(std::span(keys).subspan(2)), (std::vector<std::uint16_t>{2, 2}));
  // The store keeps working.
  const auto fresh = keys_of(231, 1);
  ASSERT_EQ(h_.put(kAlice, fresh).completion.result0, 1u);
  auto dram = h_.call(kAlice, KvOp::kGet, fresh);
  ASSERT_EQ(dram.completion.result1, 1u);
  EXPECT_TRUE(h_.holds(dram.locations[0], fresh[0]));
  ASSERT_EQ(h_.call(kAlice, KvOp::kRelease, {}, dram.completion.result0).outcome, KvStatus::kOk);
  EXPECT_EQ(h_.put(kAlice, std::span(keys).first(1)).completion.result0, 1u);
  EXPECT_EQ(h_.tiers(std::span(keys).first(1)), std::vector<std::uint16_t>{0});
}

TEST_P(KvStoreSsd, RestartIndexesRecoveredChunksAsSsd) {
  KV_OPEN_OR_SKIP(h_, options());
  auto other = h_.store().open_namespace(test_spec("other"));
  ASSERT_TRUE(other);
  const std::uint32_t mine = h_.ns();
  const auto keys = keys_of(240, 5);
  put_each(keys);
  const auto theirs = keys_of(241, 1);
  auto begin = h_.call(kAlice, KvOp::kPutBegin, theirs, kChunk, 0, 0, *other);
  const auto p = payload_of(theirs[0]);
  std::memcpy(h_.window(kAlice) + begin.locations[0].offset, p.data(), kChunk);
  ASSERT_EQ(h_.call(kAlice, KvOp::kPutCommit, theirs, begin.completion.result0).completion.result0, 1u);
  ASSERT_TRUE(h_.store().flush());  // arena chunks too: all 6 are on SSD now

  ASSERT_EQ(h_.restart(), "");
  EXPECT_EQ(h_.ns(), mine) << "the same spec gets its recovered id";
  auto list = h_.store().namespaces();
  ASSERT_EQ(list.size(), 2u);
  const KvNamespaceInfo& a = list[0].id == mine ? list[0] : list[1];
  const KvNamespaceInfo& b = list[0].id == mine ? list[1] : list[0];
  EXPECT_FALSE(a.recovered_only);
  EXPECT_EQ(a.chunks[2], 5u);
  EXPECT_TRUE(b.recovered_only);
  EXPECT_TRUE(b.spec.model_id.empty());
  EXPECT_EQ(b.fp, fingerprint(test_spec("other")));
  EXPECT_EQ(b.chunks[2], 1u);
  auto reopened = h_.store().open_namespace(test_spec("other"));
  ASSERT_TRUE(reopened);
  EXPECT_EQ(*reopened, b.id);
  EXPECT_FALSE(h_.store().namespaces()[b.id - 1].recovered_only);

  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2, 2, 2, 2}));
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(h_.get_checked(kAlice, keys[i])) << "chunk " << i;
}

TEST_P(KvStoreSsd, PerCommitWritesThroughAndSurvivesACrash) {
  HarnessOptions o = options();
  o.sync = SsdSyncPolicy::kPerCommit;
  o.dram_slots = 8;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(250, 3);
  ASSERT_EQ(h_.put(kAlice, keys).completion.result0, 3u);
  EXPECT_GE(h_.store().ssd_durable_sequence(), 3u);
  auto look = h_.call(kAlice, KvOp::kLookup, keys);
  for (const auto& l : look.locations) EXPECT_EQ(l.flags, proto::kKvLocationSsdCopy);
  ASSERT_EQ(h_.restart(), "");  // no flush, as after kill -9
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2, 2}));
  auto get = h_.call(kAlice, KvOp::kGet, keys);
  ASSERT_EQ(get.completion.result1, 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(h_.holds(get.locations[i], keys[i]));
}

TEST_P(KvStoreSsd, DropAndDeleteEraseSsdCopiesForGood) {
  KV_OPEN_OR_SKIP(h_, options());
  auto other = h_.store().open_namespace(test_spec("other"));
  ASSERT_TRUE(other);
  const auto keys = keys_of(260, 4);
  put_each(keys);
  const auto extra = keys_of(261, 2);
  put_each(extra);  // keys now all SSD-only
  auto del = h_.call(kAlice, KvOp::kDelete, std::span(extra).first(1));
  EXPECT_EQ(del.completion.result0, 1u);
  auto dropped = h_.store().drop_namespace(*other);  // nothing of ours
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->dropped, 0u);
  dropped = h_.store().drop_namespace(h_.ns());
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->dropped, 5u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, keys).completion.result0, 0u);
  EXPECT_EQ(h_.store().counters().tiers[2].chunks, 0u);
  ASSERT_TRUE(h_.store().flush());
  ASSERT_EQ(h_.restart(), "");
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, keys).completion.result0, 0u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, extra).completion.result0, 0u);
}

TEST_P(KvStoreSsd, ClientGoneWhileItsGetWaitsForTheDevice) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(270, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  h_.submit(kBob, KvOp::kGet, std::span(keys).first(2));
  h_.store().remove_client(kBob);
  h_.drain();
  for (const auto& c : h_.stray()) EXPECT_NE(c.client, kBob);
  EXPECT_EQ(h_.store().counters().leases, 0u);
  // What was read stays cached, unleased: new chunks can displace it.
  EXPECT_EQ(h_.put(kAlice, keys_of(271, 2)).completion.result0, 2u);
}

TEST_P(KvStoreSsd, ACorruptRecordFailsTheGetWithChecksumError) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(320, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));  // reads now go to the device
  // Region 0: its header block, then the first entry's header block and
  // payload.
  h_.flip_ssd_byte(2 * kSsdBlockBytes + 1234);
  auto bad = h_.call(kAlice, KvOp::kGet, std::span(keys).first(1));
  EXPECT_EQ(bad.outcome, KvStatus::kChecksumError);
  EXPECT_EQ(bad.completion.result0, 0u);
  EXPECT_EQ(h_.store().counters().leases, 0u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, std::span(keys).first(1)).completion.result0, 0u)
      << "a record that cannot be read is no longer found";
  auto good = h_.call(kAlice, KvOp::kGet, std::span(keys).subspan(1, 1));
  ASSERT_EQ(good.outcome, KvStatus::kOk);
  ASSERT_EQ(good.completion.result1, 1u);
  EXPECT_TRUE(h_.holds(good.locations[0], keys[1]));
  EXPECT_EQ(h_.outcome_count(KvStatus::kChecksumError), 1u);
  EXPECT_EQ(h_.store().ssd_stats()->corrupt_dropped, 1u);
}

TEST_P(KvStoreSsd, AFailedWriteThroughIsADeviceError) {
  // After the open: the first region's header block, then the commit's entry.
  HarnessOptions o = failing_after_open(options(), 2);
  o.sync = SsdSyncPolicy::kPerCommit;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(340, 2);
  auto failed = h_.put(kAlice, std::span(keys).first(1));
  EXPECT_EQ(failed.outcome, KvOutcome::device_error(EIO));
  EXPECT_EQ(failed.completion.result0, 0u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, std::span(keys).first(1)).completion.result0, 0u) << "not committed";
  auto next = h_.put(kAlice, std::span(keys).subspan(1, 1));
  EXPECT_EQ(next.outcome, KvStatus::kOk);
  EXPECT_EQ(next.completion.result0, 1u);
}

INSTANTIATE_TEST_SUITE_P(Drivers, KvStoreSsd, ::testing::Values(Driver::kPosix, Driver::kUring), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache::testing
