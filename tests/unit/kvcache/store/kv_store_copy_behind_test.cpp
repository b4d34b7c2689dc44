// SPDX-License-Identifier: Apache-2.0
// Copies behind answered commits (KvStoreConfig::copy_behind_min_bytes): a
// commit is answered once its chunks' CRCs are taken and their copies into
// DRAM follow. The store's state moves only in submit() and poll(), so a
// request submitted right after the commit, before any poll(), finds the
// copy not in yet; hold_copies_behind() keeps it out across polls. These
// cases check what such a chunk looks like to gets, deletes, put_begin,
// flush and a writer that goes or changes its window slot after the answer.
#include <unistd.h>

#include <cstring>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/stream_copy.hpp"
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

HarnessOptions behind_options(std::size_t window_slots = 16) {
  HarnessOptions o;
  o.config.commit_workers = 2;
  o.config.copy_behind_min_bytes = 4096;
  o.window_owners = true;
  o.window_slots = window_slots;
  return o;
}

// put_begin of one key, its payload written: the reservation id and the
// window slot's offset.
std::pair<std::uint64_t, std::uint64_t> begin_one(KvHarness& h, KvClientId client, const proto::KvKey& key) {
  KvStoreCompletion begin = h.call(client, KvOp::kPutBegin, {&key, 1}, kChunk);
  EXPECT_EQ(begin.outcome, KvStatus::kOk);
  const auto p = payload_of(key);
  std::memcpy(h.window(client) + begin.locations[0].offset, p.data(), kChunk);
  return {begin.completion.result0, begin.locations[0].offset};
}

// Alice puts `key` with the copies held: the commit is answered and its
// copy waits. The window slot's offset.
std::uint64_t commit_held(KvHarness& h, const proto::KvKey& key) {
  h.store().hold_copies_behind(true);
  const auto [rid, slot] = begin_one(h, kAlice, key);
  EXPECT_EQ(h.call(kAlice, KvOp::kPutCommit, {&key, 1}, rid).completion.result0, 1u);
  return slot;
}

TEST(KvStoreCopyBehind, AGetRightAfterTheAnswerWaitsForTheCopy) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(900, 1)[0];
  const auto [rid, slot] = begin_one(h, kAlice, key);
  h.store().hold_copies_behind(true);
  const std::uint64_t commit = h.submit(kAlice, KvOp::kPutCommit, {&key, 1}, rid);
  const std::uint64_t get = h.submit(kBob, KvOp::kGet, {&key, 1});
  // No poll yet: whatever the workers did, the store has not taken the copy back.
  EXPECT_TRUE(h.store().copies_in_flight());
  const KvStoreCompletion committed = h.wait(kAlice, commit);
  EXPECT_EQ(committed.outcome, KvStatus::kOk);
  EXPECT_EQ(committed.completion.result0, 1u);
  EXPECT_EQ(h.store().counters().puts_copied_behind, 1u);
  h.store().hold_copies_behind(false);
  const KvStoreCompletion got = h.wait(kBob, get);
  ASSERT_EQ(got.outcome, KvStatus::kOk);
  ASSERT_EQ(got.completion.result1, 1u);
  EXPECT_TRUE(h.holds(got.locations[0], key));
  EXPECT_EQ(h.call(kBob, KvOp::kRelease, {}, got.completion.result0).outcome, KvStatus::kOk);
  EXPECT_FALSE(h.store().copies_in_flight());
  EXPECT_EQ(h.store().counters().put_window_changed, 0u);
}

TEST(KvStoreCopyBehind, AWindowSlotChangedAfterTheAnswerIsNeverServed) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(901, 1)[0];
  const std::uint64_t slot = commit_held(h, key);
  // The writer breaks the contract: its slot is the store's until the copy
  // is in (held until the get below hurries it).
  h.window(kAlice)[slot + 17] = std::byte{0x5a};
  const KvStoreCompletion got = h.call(kBob, KvOp::kGet, {&key, 1});
  h.store().hold_copies_behind(false);
  EXPECT_EQ(got.outcome, KvStatus::kOk);
  EXPECT_EQ(got.completion.result1, 0u) << "a changed chunk is a miss";
  EXPECT_EQ(h.store().counters().put_window_changed, 1u);
  EXPECT_FALSE(h.get_checked(kBob, key));
  // Its DRAM slot came back.
  EXPECT_TRUE(h.dram_slots_all_back(kAlice, 902));
}

TEST(KvStoreCopyBehind, ADeleteBeforeTheCopyIsInFreesTheSlotAfterIt) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(903, 1)[0];
  commit_held(h, key);
  const KvStoreCompletion deleted = h.call(kAlice, KvOp::kDelete, {&key, 1});
  EXPECT_EQ(deleted.completion.result0, 1u);
  EXPECT_FALSE(h.get_checked(kBob, key));
  h.store().hold_copies_behind(false);
  ASSERT_TRUE(h.store().flush());
  EXPECT_FALSE(h.store().copies_in_flight());
  EXPECT_FALSE(h.get_checked(kBob, key));
  EXPECT_TRUE(h.dram_slots_all_back(kAlice, 904));
}

TEST(KvStoreCopyBehind, AWriterThatGoesLeavesItsWindowMappedUntilTheCopyIsIn) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(905, 1)[0];
  commit_held(h, key);
  const std::weak_ptr<Area> window = h.forget_window(kAlice);
  h.store().remove_client(kAlice);
  EXPECT_FALSE(window.expired()) << "the copy still reads it";
  EXPECT_FALSE(h.store().add_client(kAlice, {})) << "its id is not reused while its copies run";
  h.store().hold_copies_behind(false);
  EXPECT_TRUE(h.get_checked(kBob, key));
  EXPECT_TRUE(window.expired());
}

TEST(KvStoreCopyBehind, APutBeginShortOfWindowSlotsFinishesTheCopiesHoldingThem) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options(4));
  const auto first = keys_of(906, 3);
  for (const auto& k : first) commit_held(h, k);
  // At most half of a window waits for copies behind the answer; the third
  // commit copied before its answer.
  EXPECT_EQ(h.store().counters().puts_copied_behind, 2u);
  const auto next = keys_of(907, 3);
  const KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, next, kChunk);
  EXPECT_EQ(begin.outcome, KvStatus::kOk) << "the held copies ran on the store's thread";
  EXPECT_FALSE(h.store().copies_in_flight());
  for (const auto& k : first) EXPECT_TRUE(h.get_checked(kBob, k));
  h.store().hold_copies_behind(false);
}

TEST(KvStoreCopyBehind, SmallChunksAndNoWindowOwnerCopyBeforeTheAnswer) {
  KvHarness h;
  HarnessOptions o = behind_options();
  o.config.copy_behind_min_bytes = kChunk + 1;
  KV_OPEN_OR_SKIP(h, o);
  h.put_each(kAlice, keys_of(908, 2));
  EXPECT_EQ(h.store().counters().puts_copied_behind, 0u);
  KvHarness g;
  HarnessOptions p = behind_options();
  p.window_owners = false;  // a window the store cannot keep mapped
  KV_OPEN_OR_SKIP(g, p);
  g.put_each(kAlice, keys_of(909, 2));
  EXPECT_EQ(g.store().counters().puts_copied_behind, 0u);
}

TEST(KvStoreCopyBehind, FlushWaitsForCopiesAndWritesTheirChunksToTheLog) {
  KvHarness h;
  HarnessOptions o = behind_options();
  o.ssd = true;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(910, 3);
  for (const auto& k : keys) commit_held(h, k);
  ASSERT_TRUE(h.store().flush());
  EXPECT_FALSE(h.store().copies_in_flight());
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kBob, k));
  h.store().hold_copies_behind(false);
}

TEST(KvStoreCopyBehind, AGetWaitingForAHeldCopyHurriesIt) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(911, 1)[0];
  commit_held(h, key);
  EXPECT_EQ(h.store().counters().copies_behind_in_flight, 1u);
  // Held copies stay queued until someone waits for them: the get's copy
  // runs ahead of the background, hold or not.
  EXPECT_TRUE(h.get_checked(kBob, key));
  EXPECT_FALSE(h.store().copies_in_flight());
  EXPECT_EQ(h.store().counters().copies_behind_in_flight, 0u);
  h.store().hold_copies_behind(false);
}

TEST(KvStoreCopyBehind, AKeyDeletedBeforeItsCopyIsInCanBePutAgainAtOnce) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(912, 1)[0];
  commit_held(h, key);
  const std::uint64_t get = h.submit(kBob, KvOp::kGet, {&key, 1});
  EXPECT_EQ(h.call(kAlice, KvOp::kDelete, {&key, 1}).completion.result0, 1u);
  const KvStoreCompletion missed = h.wait(kBob, get);
  EXPECT_EQ(missed.outcome, KvStatus::kOk);
  EXPECT_EQ(missed.completion.result1, 0u) << "deleted while the get waited";
  const KvStoreCompletion again = h.put(kBob, {&key, 1});
  EXPECT_EQ(again.outcome, KvStatus::kOk);
  EXPECT_EQ(again.completion.result0, 1u);
  h.store().hold_copies_behind(false);
  ASSERT_TRUE(h.store().flush());
  EXPECT_TRUE(h.get_checked(kBob, key));
  // Both copies' slots are accounted for: the free ones all take new chunks
  // beside it.
  EXPECT_TRUE(h.dram_slots_all_back(kAlice, 913));
  EXPECT_TRUE(h.get_checked(kBob, key));
}

TEST(KvStoreCopyBehind, ANamespaceDroppedBeforeTheCopiesAreInLosesThemAtOnce) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto keys = keys_of(914, 3);
  for (const auto& k : keys) commit_held(h, k);
  const auto dropped = h.store().drop_namespace(h.ns());
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->dropped, 3u);
  EXPECT_EQ(dropped->deferred, 0u);
  h.store().hold_copies_behind(false);
  ASSERT_TRUE(h.store().flush());
  for (const auto& k : keys) EXPECT_FALSE(h.get_checked(kBob, k));
  EXPECT_TRUE(h.dram_slots_all_back(kAlice, 915));
}

TEST(KvStoreCopyBehind, APeerWaitsForTheCopyAndPinsCheckedBytesNotAnSsdLoad) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, behind_options());
  const auto key = keys_of(916, 1)[0];
  commit_held(h, key);
  EXPECT_FALSE(h.store().pin_for_peer(h.ns(), key).ok()) << "a one-sided pin treats it as not held";
  h.store().pin_for_peer_loading(h.ns(), {&key, 1});
  std::vector<KvPeerLoad> loads;
  for (int i = 0; i < 20000 && loads.empty(); ++i) {
    std::vector<KvStoreCompletion> out;
    h.store().poll(out);
    h.store().take_peer_loads(loads);
    ::usleep(50);
  }
  ASSERT_EQ(loads.size(), 1u);
  ASSERT_EQ(loads[0].pins.size(), 1u);
  EXPECT_FALSE(loads[0].pins[0].loaded);
  EXPECT_TRUE(loads[0].pins[0].crc_known);
  EXPECT_EQ(loads[0].pins[0].crc, crc32c(payload_of(key)));
  h.store().unpin_for_peer(key);
  h.store().hold_copies_behind(false);
}

// The copy's checksum is of what the destination holds, for any length and
// alignment of the tail.
TEST(KvStoreCopyBehind, CopyChecksumIsOfTheDestination) {
  for (std::size_t n : {1ul, 4095ul, 65536ul, 65537ul, 200000ul, 2ul << 20}) {
    std::vector<std::byte> src(n), dst(n);
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<std::byte>(i * 131 + 7);
    const std::uint32_t crc = copy_crc32c_of_copy(dst.data(), src.data(), n);
    EXPECT_EQ(crc, crc32c(dst)) << n;
    EXPECT_EQ(dst, src) << n;
  }
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
