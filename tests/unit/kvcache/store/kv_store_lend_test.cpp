// SPDX-License-Identifier: Apache-2.0
// KvStore demotions that lend their DRAM slot to the SSD log (the chunk is
// written from the slot, not copied into a region buffer): a get of a chunk
// whose slot is being written returns its bytes, the slot comes back to the
// arena when the write completes or fails (nothing leaks, a failed region's
// chunks are never served), and a store dropped with lent writes in flight
// restarts cleanly.
#include <vector>

#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

// Whole 4 KiB blocks, so the slot can be lent; 64 KiB regions hold 3.
constexpr std::uint32_t kBlockChunk = 12288;

class KvStoreLend : public ::testing::TestWithParam<Driver> {
 protected:
  // Four DRAM slots (two may be lent at a time), every chunk admitted.
  HarnessOptions options() const {
    HarnessOptions o;
    o.dram_slots = 4;
    o.ssd = true;
    o.driver = GetParam();
    o.region_bytes = 64 * 1024;
    o.config.admission.threshold = 1;
    o.config.ssd_lend_min_bytes = 4096;
    return o;
  }
  void put_each(std::span<const proto::KvKey> keys) {
    for (const auto& k : keys) ASSERT_EQ(h_.put(kAlice, {&k, 1}, kBlockChunk).completion.result0, 1u);
  }
  void drain() {
    for (int i = 0; i < 20000 && h_.store().io_in_flight() != 0; ++i) {
      if (h_.faulty() != nullptr) {
        while (h_.faulty()->held() != 0) h_.faulty()->release_held(0);
      }
      std::vector<KvStoreCompletion> out;
      h_.store().poll(out);
      for (auto& c : out) h_.stray().push_back(std::move(c));
      ::usleep(50);
    }
    ASSERT_EQ(h_.store().io_in_flight(), 0u);
  }
  // Gets chunk k alone (Bob) and checks its bytes; false when not served.
  bool get_checked(const proto::KvKey& k) {
    auto get = h_.call(kBob, KvOp::kGet, {&k, 1});
    EXPECT_EQ(get.outcome, KvStatus::kOk);
    if (get.completion.result1 != 1) return false;
    EXPECT_TRUE(h_.holds(get.locations[0], k, kBlockChunk));
    EXPECT_EQ(h_.call(kBob, KvOp::kRelease, {}, get.completion.result0).outcome, KvStatus::kOk);
    return true;
  }
  // Every DRAM slot in use holds a DRAM chunk: none is still lent or leaked.
  void expect_no_slot_leaked() {
    const KvStoreCounters& c = h_.store().counters();
    EXPECT_EQ(c.tiers[0].used_bytes, c.tiers[0].chunks * kSlot);
  }

  KvHarness h_;
};

TEST_P(KvStoreLend, GetOfAChunkWhoseSlotIsBeingWrittenReturnsItsBytes) {
  HarnessOptions o = options();
  o.faulty = true;
  o.fault.hold_write_completions = true;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(300, 10);
  put_each(keys);
  const SsdStoreStats& st = *h_.store().ssd_stats();
  EXPECT_GE(st.lent_puts, 2u);
  EXPECT_GE(h_.store().ssd_writes_in_flight(), 1u) << "region 0's writes are held back";
  // The demoted chunks are served from the lent slots / region buffers.
  const std::uint64_t buffer_reads = st.buffer_reads;
  std::size_t on_ssd = 0;
  const auto tiers = h_.tiers(keys);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (tiers[i] != 2) continue;
    ++on_ssd;
    EXPECT_TRUE(get_checked(keys[i])) << "chunk " << i;
  }
  EXPECT_GE(on_ssd, 6u);
  EXPECT_GT(st.buffer_reads, buffer_reads);

  // Writes complete: the slots come back and are reused by new chunks; the
  // old ones now come from the device, intact.
  drain();
  put_each(keys_of(301, 8));
  drain();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_TRUE(get_checked(keys[i])) << "chunk " << i;
  ASSERT_TRUE(h_.store().flush());
  expect_no_slot_leaked();
  EXPECT_EQ(st.write_errors, 0u);
}

TEST_P(KvStoreLend, FailedWriteOfALentSlotDropsItsChunksAndFreesTheSlot) {
  HarnessOptions o = options();
  o.faulty = true;
  // Data operations: 16 region-header reads at open, then region 0's
  // writes: its headers, then the first lent chunk from its slot.
  o.fault.fail_nth_op = o.ssd_regions + 2;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(310, 10);
  put_each(keys);
  drain();
  EXPECT_EQ(h_.faulty()->injected(), 1u);
  const SsdStoreStats& st = *h_.store().ssd_stats();
  EXPECT_GE(st.lent_puts, 1u);
  EXPECT_EQ(st.write_dropped, 3u);
  // Region 0 held the first three demoted chunks: never served.
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, std::span(keys).subspan(i, 1)).completion.result0, 0u) << i;
    EXPECT_FALSE(get_checked(keys[i])) << "chunk " << i << " served";
  }
  for (std::size_t i = 3; i < keys.size(); ++i) EXPECT_TRUE(get_checked(keys[i])) << "chunk " << i;
  put_each(keys_of(311, 6));  // every slot can be had again
  EXPECT_FALSE(h_.store().flush());  // reports the failed write
  expect_no_slot_leaked();
}

TEST_P(KvStoreLend, StoreDroppedWithLentWritesInFlightRestartsIntact) {
  HarnessOptions o = options();
  o.faulty = true;
  o.fault.hold_write_completions = true;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(320, 10);
  put_each(keys);
  EXPECT_GE(h_.store().ssd_writes_in_flight(), 1u);
  EXPECT_GE(h_.store().ssd_stats()->lent_puts, 2u);
  // Dropped as a crash would be, without a flush: the log's destructor waits
  // for the writes that read the lent slots before the arena goes.
  ASSERT_EQ(h_.restart(), "");
  std::size_t recovered = 0;
  const auto tiers = h_.tiers(keys);
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    ASSERT_EQ(tiers[i], 2u);
    EXPECT_TRUE(get_checked(keys[i])) << "recovered chunk " << i;
    ++recovered;
  }
  EXPECT_GE(recovered, 3u) << "region 0 was sealed and written";
  EXPECT_EQ(h_.store().ssd_stats()->corrupt_dropped, 0u);
}

INSTANTIATE_TEST_SUITE_P(Drivers, KvStoreLend, ::testing::Values(Driver::kPosix, Driver::kUring), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache::testing
