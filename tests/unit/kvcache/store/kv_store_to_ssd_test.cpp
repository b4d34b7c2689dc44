// SPDX-License-Identifier: Apache-2.0
// put_commit with kKvPutCommitToSsd: the chunks go to the SSD log only. A
// large one is written from its put-window slot (no copy): the slot stays
// taken until its region's write completes, a get before then copies from
// the window and checks the copy against the CRC taken at the commit (a
// changed chunk is dropped: a miss), a full window takes its slots back from
// the log's open region (copied into its buffer) and a client that goes
// leaves its window mapped (by its owner) only while regions holding its
// slots are being written. Chunks that
// cannot be lent are copied into the log; without a log the flag is moot.
// The suite runs with and without commit workers (meson.build).
#include <cstring>
#include <memory>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

HarnessOptions to_ssd_options(Driver driver, std::uint32_t region_bytes = 64 * 1024) {
  HarnessOptions o = lending_options(driver);
  o.window_owners = true;
  o.region_bytes = region_bytes;
  return o;
}

class KvStoreToSsd : public KvStoreOverSsd {
 protected:
  struct Put {
    KvStoreCompletion commit;
    std::vector<std::uint64_t> window_offsets;  // where each chunk was written
  };

  // put_begin, write, put_commit with the flag.
  Put put_to_ssd(KvClientId client, std::span<const proto::KvKey> keys, std::uint32_t bytes = kBlockChunk) {
    Put out;
    KvStoreCompletion begin = h_.call(client, KvOp::kPutBegin, keys, bytes);
    EXPECT_EQ(begin.outcome, KvStatus::kOk);
    if (!begin.outcome.ok()) {
      out.commit = begin;
      return out;
    }
    for (std::size_t i = 0; i < begin.locations.size(); ++i) {
      const proto::KvLocation& loc = begin.locations[i];
      out.window_offsets.push_back(loc.offset);
      if (loc.flags & proto::kKvLocationCached) continue;
      const auto p = payload_of(keys[i], bytes);
      std::memcpy(h_.window(client) + loc.offset, p.data(), bytes);
    }
    out.commit = h_.call(client, KvOp::kPutCommit, keys, begin.completion.result0, 0, proto::kKvPutCommitToSsd);
    return out;
  }

  std::uint64_t dram_chunks() { return h_.store().counters().tiers[0].chunks; }
};

TEST_P(KvStoreToSsd, ChunksGoToTheLogFromTheirWindowSlotsWithoutADramSlot) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam()));
  const auto keys = keys_of(400, 2);
  const Put put = put_to_ssd(kAlice, keys);
  ASSERT_EQ(put.commit.outcome, KvStatus::kOk);
  EXPECT_EQ(put.commit.completion.result0, 2u);
  EXPECT_EQ(put.commit.completion.result1, 2u) << "chunks stored on the SSD log only";
  EXPECT_EQ(h_.store().counters().puts_to_ssd, 2u);
  EXPECT_EQ(h_.store().counters().window_lends, 2u);
  EXPECT_EQ(h_.store().ssd_stats()->lent_puts, 2u);
  EXPECT_EQ(dram_chunks(), 0u);
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2}));
  // Served (into DRAM slots) from the window while their region is open.
  const std::uint64_t buffer_reads = h_.store().ssd_stats()->buffer_reads;
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  EXPECT_EQ(h_.store().ssd_stats()->buffer_reads, buffer_reads + 2);

  // Written out: the window's slots are Alice's again, every one of them.
  ASSERT_TRUE(h_.store().flush());
  EXPECT_EQ(h_.call(kAlice, KvOp::kPutBegin, keys_of(401, 16), kBlockChunk).outcome, KvStatus::kOk);
  ASSERT_EQ(h_.restart(), "");
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk)) << "after a restart";
}

// Declared checksums (kKvPutCommitChecksums) are checked against the window
// slot the log writes from (lent) or copies (small chunks): a mismatch is
// not stored.
TEST_P(KvStoreToSsd, DeclaredChecksumsAreCheckedAgainstTheWindowSlot) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam()));
  for (const std::uint32_t bytes : {kBlockChunk, 1000u}) {  // lent from the window; copied into the log's buffer
    SCOPED_TRACE(bytes);
    const auto keys = keys_of(bytes == 1000 ? 431 : 430, 2);
    KvStoreCompletion begin = h_.call(kAlice, KvOp::kPutBegin, keys, bytes);
    ASSERT_EQ(begin.outcome, KvStatus::kOk);
    std::vector<std::uint32_t> crcs;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto p = payload_of(keys[i], bytes);
      std::memcpy(h_.window(kAlice) + begin.locations[i].offset, p.data(), bytes);
      crcs.push_back(crc32c(p));
    }
    crcs[1] ^= 0x100;
    std::vector<proto::KvKey> records(keys.begin(), keys.end());
    proto::kv_append_checksums(crcs, records);
    const std::uint64_t mismatches = h_.store().counters().put_checksum_mismatch;
    const auto commit = h_.call(kAlice, KvOp::kPutCommit, records, begin.completion.result0, keys.size(),
                                proto::kKvPutCommitToSsd | proto::kKvPutCommitChecksums);
    EXPECT_EQ(commit.outcome, KvStatus::kOk);
    EXPECT_EQ(commit.completion.result0, 1u);
    EXPECT_EQ(commit.completion.result1, 1u);
    EXPECT_EQ(h_.store().counters().put_checksum_mismatch, mismatches + 1);
    EXPECT_TRUE(h_.get_checked(kBob, keys[0], bytes));
    EXPECT_FALSE(h_.get_checked(kBob, keys[1], bytes));
  }
}

TEST_P(KvStoreToSsd, AChunkItsWriterChangedAfterTheCommitIsNeverServed) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam()));
  const auto keys = keys_of(410, 2);
  const Put put = put_to_ssd(kAlice, keys);
  ASSERT_EQ(put.commit.completion.result1, 2u);
  std::memset(h_.window(kAlice) + put.window_offsets[1] + 4096, 0x5A, 16);
  // A miss for the reader, as if the writer had deleted it: the prefix ends
  // before it.
  const auto both = h_.call(kBob, KvOp::kGet, keys);
  EXPECT_EQ(both.outcome, KvStatus::kOk);
  EXPECT_EQ(both.completion.result1, 1u);
  ASSERT_EQ(h_.call(kBob, KvOp::kRelease, {}, both.completion.result0).outcome, KvStatus::kOk);
  EXPECT_EQ(h_.call(kBob, KvOp::kLookup, std::span(keys).subspan(1, 1)).completion.result0, 0u);
  EXPECT_EQ(h_.store().ssd_stats()->lent_changed, 1u);
  EXPECT_EQ(h_.store().ssd_stats()->corrupt_dropped, 0u);
  EXPECT_TRUE(h_.get_checked(kBob, keys[0], kBlockChunk));
  ASSERT_TRUE(h_.store().flush());
  ASSERT_EQ(h_.restart(), "");
  // The device holds what the window held when it was written: the changed
  // chunk fails its CRC there too, the other one is intact.
  EXPECT_TRUE(h_.get_checked(kBob, keys[0], kBlockChunk));
  const auto again = h_.call(kBob, KvOp::kGet, std::span(keys).subspan(1, 1));
  EXPECT_NE(again.completion.result1, 1u);
  expect_no_slot_leaked();
}

TEST_P(KvStoreToSsd, AFullWindowTakesItsSlotsBackFromTheOpenRegion) {
  HarnessOptions o = to_ssd_options(GetParam(), 256 * 1024);
  o.window_slots = 4;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(420, 4);
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 4u);
  const std::uint64_t sealed = h_.store().ssd_stats()->regions_sealed;
  // The region is far from full: its lent slots are copied into its buffer
  // rather than the region cut short.
  const auto more = keys_of(421, 2);
  const Put again = put_to_ssd(kAlice, more);
  EXPECT_EQ(again.commit.completion.result1, 2u);
  EXPECT_EQ(h_.store().counters().window_reclaims, 4u);
  EXPECT_EQ(h_.store().ssd_stats()->regions_sealed, sealed);
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  for (const auto& k : more) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  ASSERT_TRUE(h_.store().flush());
  ASSERT_EQ(h_.restart(), "");
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk)) << "after a restart";
}

TEST_P(KvStoreToSsd, AFullWindowWaitsForSlotsOnTheirWayToTheDevice) {
  HarnessOptions o = holding_writes(to_ssd_options(GetParam()));
  o.window_slots = 4;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(425, 4);  // three fill region 0, which goes out
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 4u);
  EXPECT_GE(h_.store().ssd_writes_in_flight(), 1u);
  const std::uint64_t sealed = h_.store().ssd_stats()->regions_sealed;
  const auto more = keys_of(426, 1);
  EXPECT_EQ(h_.call(kAlice, KvOp::kPutBegin, more, kBlockChunk).outcome, KvStatus::kRetry);
  EXPECT_EQ(h_.store().ssd_stats()->regions_sealed, sealed);
  EXPECT_EQ(h_.store().counters().window_reclaims, 0u) << "region 0's slots come back by themselves";
  h_.drain();
  EXPECT_EQ(put_to_ssd(kAlice, more).commit.completion.result1, 1u);
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
}

TEST_P(KvStoreToSsd, AClientsWindowStaysMappedWhileRegionsHoldingItsSlotsAreWritten) {
  KV_OPEN_OR_SKIP(h_, holding_writes(to_ssd_options(GetParam())));
  const auto keys = keys_of(430, 4);  // three in region 0, being written; one in the open region
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 4u);
  h_.store().remove_client(kAlice);
  EXPECT_EQ(h_.store().counters().window_reclaims, 1u) << "the open region's slot, copied at once";
  const std::weak_ptr<Area> window = h_.forget_window(kAlice);
  EXPECT_FALSE(window.expired()) << "the log still writes region 0 from it";
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  EXPECT_EQ(h_.store().add_client(kAlice, {}).error().code, EEXIST) << "its window is still the store's";
  h_.drain();
  EXPECT_TRUE(window.expired()) << "written: the store let the window go";
  ASSERT_TRUE(h_.store().add_client(kAlice, {}));
  ASSERT_TRUE(h_.store().flush());
  ASSERT_EQ(h_.restart(), "");
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk)) << "after a restart";
}

// Registered buffers of the device that lie in `window`.
std::size_t registered_in(const hal::BlockDevice& device, std::span<const std::byte> window) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < device.registered_buffer_count(); ++i) {
    const auto* base = static_cast<const std::byte*>(device.registered_buffer(i).iov_base);
    n += base >= window.data() && base < window.data() + window.size() ? 1 : 0;
  }
  return n;
}

// A put-window slot the log writes from is registered with the device at
// its first lend and stays so while its client is there; the places come
// back when the client goes (a retired window's after its writes).
TEST_P(KvStoreToSsd, WindowSlotsAreRegisteredWhileTheLogMayWriteFromThem) {
  HarnessOptions o = holding_writes(to_ssd_options(GetParam()));
  o.window_slots = 4;
  KV_OPEN_OR_SKIP(h_, o);
  const KvStoreCounters& c = h_.store().counters();
  const hal::BlockDevice& device = *h_.faulty();
  const std::span<const std::byte> alices{h_.window(kAlice), 4 * kSlot};
  EXPECT_EQ(c.ssd_registrations, 0u) << "nothing is registered before a lend";
  const auto keys = keys_of(470, 3);  // region 0, written from Alice's window
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 3u);
  EXPECT_EQ(c.ssd_registrations, 3u);
  EXPECT_EQ(registered_in(device, alices), 3u);
  h_.drain();
  // Every slot again, and once more: each is registered once.
  for (int round = 0; round < 2; ++round) {
    const auto more = keys_of(472 + round, 4);
    ASSERT_EQ(put_to_ssd(kAlice, more).commit.completion.result1, 4u);
    ASSERT_TRUE(h_.store().flush());
    h_.drain();
    for (const auto& k : more) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  }
  EXPECT_EQ(c.ssd_registrations, 4u);
  EXPECT_EQ(registered_in(device, alices), 4u);

  // Retired while a region is written from it (three chunks; the fourth,
  // in the open region, is copied at once): registered until then.
  const auto last = keys_of(475, 4);
  ASSERT_EQ(put_to_ssd(kAlice, last).commit.completion.result1, 4u);
  h_.store().remove_client(kAlice);
  const std::weak_ptr<Area> retired = h_.forget_window(kAlice);
  ASSERT_FALSE(retired.expired());
  EXPECT_GE(registered_in(device, alices), 3u);
  h_.drain();
  EXPECT_TRUE(retired.expired());
  EXPECT_EQ(registered_in(device, alices), 0u) << "the device let go of the window before it went";
  for (const auto& k : last) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  EXPECT_EQ(c.ssd_registration_errors, 0u);
}

TEST_P(KvStoreToSsd, AClientWhoseSlotsAllWaitForTheOpenRegionLetsItsWindowGoAtOnce) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam()));
  const auto keys = keys_of(435, 2);
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 2u);
  h_.store().remove_client(kAlice);
  EXPECT_TRUE(h_.forget_window(kAlice).expired()) << "its slots were copied into the region's buffer";
  EXPECT_EQ(h_.store().counters().window_reclaims, 2u);
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  ASSERT_TRUE(h_.store().flush());
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk)) << "from the device";
}

TEST_P(KvStoreToSsd, StoreDroppedWithWindowWritesInFlightRestartsIntact) {
  KV_OPEN_OR_SKIP(h_, holding_writes(to_ssd_options(GetParam())));
  const auto keys = keys_of(440, 4);  // three fill region 0, which is sealed
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 4u);
  EXPECT_GE(h_.store().ssd_writes_in_flight(), 1u);
  ASSERT_EQ(h_.restart(), "");
  const auto tiers = h_.tiers(keys);
  ASSERT_GE(tiers.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(h_.get_checked(kBob, keys[i], kBlockChunk)) << i;
  EXPECT_EQ(h_.store().ssd_stats()->corrupt_dropped, 0u);
}

TEST_P(KvStoreToSsd, WithoutAWindowOwnerTheChunksAreCopiedIntoTheLog) {
  HarnessOptions o = to_ssd_options(GetParam());
  o.window_owners = false;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(450, 2);
  const Put put = put_to_ssd(kAlice, keys);
  EXPECT_EQ(put.commit.completion.result1, 2u);
  EXPECT_EQ(h_.store().counters().window_lends, 0u);
  EXPECT_EQ(h_.store().ssd_stats()->lent_puts, 0u);
  // Copied: the window is free at once, and changing it changes nothing.
  std::memset(h_.window(kAlice) + put.window_offsets[0], 0x5A, kBlockChunk);
  EXPECT_EQ(h_.call(kAlice, KvOp::kPutBegin, keys_of(451, 16), kBlockChunk).outcome, KvStatus::kOk);
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
}

TEST_P(KvStoreToSsd, ChunksBelowTheLendSizeAreCopiedIntoTheLog) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam()));
  const auto keys = keys_of(460, 3);
  const Put put = put_to_ssd(kAlice, keys, kChunk);  // not whole 4 KiB blocks
  EXPECT_EQ(put.commit.completion.result1, 3u);
  EXPECT_EQ(h_.store().counters().window_lends, 0u);
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2, 2}));
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kChunk));
}

TEST_P(KvStoreToSsd, PerCommitPolicyMakesThemDurableBeforeTheAnswer) {
  HarnessOptions o = to_ssd_options(GetParam());
  o.sync = SsdSyncPolicy::kPerCommit;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(470, 2);
  EXPECT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 2u);
  EXPECT_EQ(h_.store().counters().window_lends, 0u);
  ASSERT_EQ(h_.restart(), "");  // a crash: no flush
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2}));
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
}

TEST_P(KvStoreToSsd, AKeyStoredAlreadyCountsWithoutASecondCopy) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam()));
  const auto keys = keys_of(480, 1);
  ASSERT_EQ(h_.put(kAlice, keys, kBlockChunk).completion.result0, 1u);  // into DRAM
  const Put put = put_to_ssd(kAlice, keys);
  EXPECT_EQ(put.commit.completion.result0, 1u);
  EXPECT_EQ(put.commit.completion.result1, 0u);
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{0}));
}

TEST_P(KvStoreToSsd, AOneSlotWindowCopiesRatherThanCutRegionsShort) {
  HarnessOptions o = to_ssd_options(GetParam(), 256 * 1024);
  o.window_slots = 1;
  KV_OPEN_OR_SKIP(h_, o);
  const std::uint64_t sealed = h_.store().ssd_stats()->regions_sealed;
  std::vector<proto::KvKey> keys;
  for (std::uint64_t i = 0; i < 12; ++i) {
    keys.push_back(keys_of(427, 1, i)[0]);
    ASSERT_EQ(put_to_ssd(kAlice, std::span(keys).last(1)).commit.completion.result1, 1u) << i;
  }
  EXPECT_EQ(h_.store().ssd_stats()->regions_sealed, sealed) << "12 chunks fit one region";
  EXPECT_EQ(h_.store().counters().window_reclaims, 11u);
  for (const auto& k : keys) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
}

TEST_P(KvStoreToSsd, AFailedRegionWriteGivesTheWindowSlotsBack) {
  HarnessOptions o = to_ssd_options(GetParam());
  o.window_slots = 4;
  o.faulty = true;
  o.fault.fail_nth_op = o.ssd_regions + 1;  // region 0's first write, and all after
  o.fault.fail_all_after = true;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(445, 4);
  ASSERT_EQ(put_to_ssd(kAlice, keys).commit.completion.result1, 4u);
  EXPECT_FALSE(h_.store().flush());
  h_.drain();
  EXPECT_EQ(h_.call(kBob, KvOp::kLookup, keys).completion.result0, 0u) << "never served from a failed region";
  EXPECT_EQ(h_.call(kAlice, KvOp::kPutBegin, keys_of(446, 4), kBlockChunk).outcome, KvStatus::kOk)
      << "every window slot is back";
  EXPECT_EQ(h_.call(kAlice, KvOp::kPutBegin, keys_of(447, 1), kBlockChunk).outcome, KvStatus::kRetry);
}

TEST_P(KvStoreToSsd, AClientRemovedWhileItsCrcsAreTakenLeavesNothingBehind) {
  HarnessOptions o = to_ssd_options(GetParam());
  o.window_slots = 8;
  KV_OPEN_OR_SKIP(h_, o);
  if (h_.store().commit_workers() == 0) GTEST_SKIP() << "the CRCs are taken at once without commit workers";
  const auto keys = keys_of(455, 8);
  const auto begin = h_.call(kAlice, KvOp::kPutBegin, keys, kBlockChunk);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  h_.submit(kAlice, KvOp::kPutCommit, keys, begin.completion.result0, 0, proto::kKvPutCommitToSsd);
  EXPECT_EQ(h_.store().commits_in_flight(), 1u);
  h_.store().remove_client(kAlice);
  EXPECT_TRUE(h_.forget_window(kAlice).expired()) << "nothing was lent yet";
  EXPECT_EQ(h_.store().commits_in_flight(), 0u);
  EXPECT_EQ(h_.store().counters().reservations, 0u);
  EXPECT_EQ(h_.call(kBob, KvOp::kLookup, keys).completion.result0, 0u);
  ASSERT_TRUE(h_.store().flush());
  EXPECT_EQ(h_.store().counters().puts_to_ssd, 0u);
}

TEST_P(KvStoreToSsd, DemotionsAndWindowChunksShareARegion) {
  KV_OPEN_OR_SKIP(h_, to_ssd_options(GetParam(), 256 * 1024));
  const auto dram = keys_of(465, 10);  // 4 DRAM slots: six demotions, lent from their slots
  h_.put_each(kBob, dram, kBlockChunk);
  const auto direct = keys_of(466, 4);
  ASSERT_EQ(put_to_ssd(kAlice, direct).commit.completion.result1, 4u);
  EXPECT_GT(h_.store().ssd_stats()->lent_puts, h_.store().counters().window_lends) << "demotions were lent too";
  ASSERT_TRUE(h_.store().flush());
  ASSERT_EQ(h_.restart(), "");
  for (const auto& k : direct) EXPECT_TRUE(h_.get_checked(kBob, k, kBlockChunk));
  std::size_t on_ssd = 0;
  const auto tiers = h_.tiers(dram);
  for (std::size_t i = 0; i < tiers.size(); ++i) on_ssd += tiers[i] == 2 && h_.get_checked(kAlice, dram[i], kBlockChunk);
  EXPECT_GE(on_ssd, 6u);
}

TEST_P(KvStoreToSsd, AKeyAnotherClientStoredMeanwhileKeepsItsCopyAndFreesTheSlot) {
  HarnessOptions o = to_ssd_options(GetParam(), 256 * 1024);
  o.window_slots = 2;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(475, 2);
  const auto begin = h_.call(kAlice, KvOp::kPutBegin, keys, kBlockChunk);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  ASSERT_EQ(h_.put(kBob, std::span(keys).first(1), kBlockChunk).completion.result0, 1u);  // into DRAM
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto p = payload_of(keys[i], kBlockChunk);
    std::memcpy(h_.window(kAlice) + begin.locations[i].offset, p.data(), kBlockChunk);
  }
  const auto commit = h_.call(kAlice, KvOp::kPutCommit, keys, begin.completion.result0, 0, proto::kKvPutCommitToSsd);
  EXPECT_EQ(commit.completion.result0, 2u);
  EXPECT_EQ(commit.completion.result1, 1u);
  EXPECT_EQ(h_.store().counters().window_lends, 1u);
  EXPECT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{0, 2}));
  EXPECT_EQ(h_.call(kAlice, KvOp::kPutBegin, keys_of(476, 1), kBlockChunk).outcome, KvStatus::kOk)
      << "the stored key's slot came back";
}

INSTANTIATE_TEST_SUITE_P(Drivers, KvStoreToSsd, ::testing::Values(Driver::kPosix, Driver::kUring), driver_name);

// Without an SSD log the flag is ignored: the chunks land in DRAM.
TEST(KvStoreToSsdWithoutALog, ChunksLandInDram) {
  KvHarness h;
  HarnessOptions o;
  o.window_owners = true;
  ASSERT_EQ(h.open(o), "");
  const auto keys = keys_of(490, 2);
  KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, keys, kChunk);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  const auto commit = h.call(kAlice, KvOp::kPutCommit, keys, begin.completion.result0, 0, proto::kKvPutCommitToSsd);
  EXPECT_EQ(commit.completion.result0, 2u);
  EXPECT_EQ(commit.completion.result1, 0u);
  EXPECT_EQ(h.tiers(keys), (std::vector<std::uint16_t>{0, 0}));
  EXPECT_EQ(h.store().counters().puts_to_ssd, 0u);
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
