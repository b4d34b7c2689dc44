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

class KvStoreLend : public KvStoreOverSsd {
 protected:
  HarnessOptions options() const { return lending_options(GetParam()); }
  void put_each(std::span<const proto::KvKey> keys) { h_.put_each(kAlice, keys, kBlockChunk); }
  // Gets chunk k alone (Bob) and checks its bytes; false when not served.
  bool get_checked(const proto::KvKey& k) { return h_.get_checked(kBob, k, kBlockChunk); }
};

TEST_P(KvStoreLend, GetOfAChunkWhoseSlotIsBeingWrittenReturnsItsBytes) {
  KV_OPEN_OR_SKIP(h_, holding_writes(options()));
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
  h_.drain();
  put_each(keys_of(301, 8));
  h_.drain();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_TRUE(get_checked(keys[i])) << "chunk " << i;
  ASSERT_TRUE(h_.store().flush());
  expect_no_slot_leaked();
  EXPECT_EQ(st.write_errors, 0u);
}

TEST_P(KvStoreLend, FailedWriteOfALentSlotDropsItsChunksAndFreesTheSlot) {
  // After the open: region 0's headers, then the first lent chunk from its
  // slot.
  KV_OPEN_OR_SKIP(h_, failing_after_open(options(), 2));
  const auto keys = keys_of(310, 10);
  put_each(keys);
  h_.drain();
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
  KV_OPEN_OR_SKIP(h_, holding_writes(options()));
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
