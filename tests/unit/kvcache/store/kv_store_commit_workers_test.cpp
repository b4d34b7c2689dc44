// SPDX-License-Identifier: Apache-2.0
// KvStore with commit workers: a commit's copies run on worker threads and
// the commit finishes in a later poll(). The store's state moves only in
// submit() and poll(), so what a request submitted before the next poll()
// sees is deterministic however fast the workers copy: these cases check
// what an in-flight commit's chunks and slots look like to everything else,
// two commits of one key, a client that goes (its window unmapped right
// after) or a store destroyed while copies are in flight. A commit that
// finds no copy out copies its first chunk on the caller's thread and hands
// the rest out, so the commits here that must stay in flight have two
// chunks or more, or follow one that does.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "commit_copier.hpp"
#include "cxlpool/common/crc32c.hpp"
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

HarnessOptions with_workers(HarnessOptions o = {}, std::uint32_t workers = 2) {
  o.config.commit_workers = workers;
  return o;
}

// put_begin of `keys` and their payloads written into the window: the
// reservation id.
std::uint64_t begin_and_write(KvHarness& h, KvClientId client, std::span<const proto::KvKey> keys) {
  KvStoreCompletion begin = h.call(client, KvOp::kPutBegin, keys, kChunk);
  EXPECT_EQ(begin.outcome, KvStatus::kOk);
  for (std::size_t i = 0; i < begin.locations.size(); ++i) {
    if (begin.locations[i].flags & proto::kKvLocationCached) continue;
    const auto p = payload_of(keys[i]);
    std::memcpy(h.window(client) + begin.locations[i].offset, p.data(), kChunk);
  }
  return begin.completion.result0;
}

// A chunk that finds every slot leased (nothing will come back by itself)
// is still refused at once.
TEST(KvStoreCommitWorkers, ACommitWhoseSlotsAreAllLeasedIsRefused) {
  KvHarness h;
  HarnessOptions o = with_workers();
  o.dram_slots = 2;
  ASSERT_EQ(h.open(o), "");
  const auto held = keys_of(710, 2);
  h.put_each(kAlice, held);
  const KvStoreCompletion lease = h.call(kBob, KvOp::kGet, held);
  ASSERT_EQ(lease.completion.result1, 2u);
  const auto more = keys_of(711, 1);
  const std::uint64_t r = begin_and_write(h, kAlice, more);
  const KvStoreCompletion refused = h.call(kAlice, KvOp::kPutCommit, more, r);
  EXPECT_EQ(refused.outcome, KvStatus::kRejected);
  EXPECT_EQ(h.store().commits_in_flight(), 0u);
}

TEST(KvStoreCommitWorkers, RejectsTooManyWorkers) {
  Area dram(4 * kSlot);
  KvStoreConfig c = HarnessOptions::default_config();
  c.commit_workers = kMaxCommitWorkers + 1;
  auto s = KvStore::create(c, {dram.span(), {}}, nullptr);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, EINVAL);
  EXPECT_NE(s.error().message.find("commit_workers"), std::string::npos) << s.error().message;
  c.commit_workers = 0;
  auto none = KvStore::create(c, {dram.span(), {}}, nullptr);
  ASSERT_TRUE(none);
  EXPECT_EQ((*none)->commit_fd(), -1);
}

TEST(KvStoreCommitWorkers, CopiesFinishInPollAndAreInvisibleBefore) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, with_workers());
  ASSERT_GE(h.store().commit_fd(), 0);
  const auto keys = keys_of(1, 4);
  const std::uint64_t rid = begin_and_write(h, kAlice, keys);
  const std::uint64_t commit = h.submit(kAlice, KvOp::kPutCommit, keys, rid);
  EXPECT_EQ(h.store().commits_in_flight(), 1u);
  EXPECT_EQ(h.store().counters().commits_in_flight, 1u);
  EXPECT_EQ(h.store().counters().commit_copies_offloaded, 3u);  // the first was copied at submit
  // Served before the next poll: the chunks are in no index yet.
  const std::uint64_t lookup = h.submit(kBob, KvOp::kLookup, keys);
  const std::uint64_t get = h.submit(kBob, KvOp::kGet, keys);
  // A second commit of the reservation finds it gone.
  const std::uint64_t again = h.submit(kAlice, KvOp::kPutCommit, keys, rid);
  EXPECT_EQ(h.wait(kBob, lookup).completion.result0, 0u);
  EXPECT_EQ(h.wait(kBob, get).completion.result1, 0u);
  EXPECT_EQ(h.wait(kAlice, again).outcome, KvStatus::kNotFound);
  const KvStoreCompletion done = h.wait(kAlice, commit);
  EXPECT_EQ(done.outcome, KvStatus::kOk);
  EXPECT_EQ(done.completion.result0, 4u);
  EXPECT_EQ(h.store().commits_in_flight(), 0u);
  EXPECT_EQ(h.store().counters().reservations, 0u);
  EXPECT_EQ(h.store().counters().puts, 4u);
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kBob, k));
}

TEST(KvStoreCommitWorkers, WindowSlotsComeBackOnlyWhenTheCopiesAreDone) {
  KvHarness h;
  HarnessOptions o = with_workers();
  o.dram_slots = 32;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(2, 16);  // the whole window
  const std::uint64_t rid = begin_and_write(h, kAlice, keys);
  const std::uint64_t commit = h.submit(kAlice, KvOp::kPutCommit, keys, rid);
  const auto more = keys_of(3, 1);
  const std::uint64_t full = h.submit(kAlice, KvOp::kPutBegin, more, kChunk);
  EXPECT_EQ(h.wait(kAlice, full).outcome, KvStatus::kRetry);
  EXPECT_EQ(h.wait(kAlice, commit).completion.result0, 16u);
  EXPECT_EQ(h.call(kAlice, KvOp::kPutBegin, more, kChunk).outcome, KvStatus::kOk);
}

TEST(KvStoreCommitWorkers, SlotsOfCopiesInFlightAreNoVictimsAndACommitWaitsForThem) {
  KvHarness h;
  HarnessOptions o = with_workers();
  o.dram_slots = 2;
  KV_OPEN_OR_SKIP(h, o);
  const auto old = keys_of(4, 2);
  h.put_each(kAlice, old);
  const auto c = keys_of(5, 2), e = keys_of(7, 1);
  const std::uint64_t rc = begin_and_write(h, kAlice, c);
  const std::uint64_t re = begin_and_write(h, kBob, e);
  // c's two chunks take the two slots (evicting the old chunks); e finds
  // every slot held by a commit in flight: no victim, but slots that come
  // back, so it waits for c rather than fail.
  const std::uint64_t commit_c = h.submit(kAlice, KvOp::kPutCommit, c, rc);
  ASSERT_EQ(h.store().commits_in_flight(), 1u) << "c's second chunk is copied on a worker";
  const std::uint64_t commit_e = h.submit(kBob, KvOp::kPutCommit, e, re);
  EXPECT_EQ(h.store().commits_in_flight(), 2u) << "e waits";
  EXPECT_EQ(h.wait(kAlice, commit_c).completion.result0, 2u) << "c's slots were no victims";
  const KvStoreCompletion waited = h.wait(kBob, commit_e);
  EXPECT_EQ(waited.outcome, KvStatus::kOk);
  EXPECT_EQ(waited.completion.result0, 1u);
  EXPECT_EQ(h.store().commits_in_flight(), 0u);
  EXPECT_EQ(h.call(kBob, KvOp::kLookup, old).completion.result0, 0u);
  // Once in, c's chunks are victims as any: e took one of their slots.
  EXPECT_TRUE(h.get_checked(kBob, e[0]));
  EXPECT_EQ(h.store().counters().tiers[0].chunks, 2u);
}

// A commit waiting for slots ends with its client, or with a flush (which
// answers it, with a slot or without).
TEST(KvStoreCommitWorkers, AWaitingCommitEndsWithItsClientOrAFlush) {
  for (const bool client_goes : {true, false}) {
    KvHarness h;
    HarnessOptions o = with_workers();
    o.dram_slots = 2;
    KV_OPEN_OR_SKIP(h, o);
    const auto c = keys_of(8, 2), e = keys_of(9, 1);
    const std::uint64_t rc = begin_and_write(h, kAlice, c);
    const std::uint64_t re = begin_and_write(h, kBob, e);
    const std::uint64_t commit_c = h.submit(kAlice, KvOp::kPutCommit, c, rc);
    const std::uint64_t commit_e = h.submit(kBob, KvOp::kPutCommit, e, re);
    ASSERT_EQ(h.store().commits_in_flight(), 2u);
    if (client_goes) {
      h.store().remove_client(kBob);
      EXPECT_EQ(h.store().commits_in_flight(), 1u);
      EXPECT_EQ(h.wait(kAlice, commit_c).completion.result0, 2u);
      EXPECT_EQ(h.call(kAlice, KvOp::kLookup, e).completion.result0, 0u);
      EXPECT_EQ(h.store().counters().reservations, 0u);
    } else {
      ASSERT_TRUE(h.store().flush());
      EXPECT_EQ(h.store().commits_in_flight(), 0u);
      EXPECT_EQ(h.wait(kAlice, commit_c).completion.result0, 2u);
      EXPECT_EQ(h.wait(kBob, commit_e).completion.result0, 1u);
    }
  }
}

// The only DRAM slots that could come back are lent to the log's open
// region, which fills only with more puts: the commit does not wait for
// them (nothing else would write the region), the log copies them into its
// buffer and the commit takes one.
TEST(KvStoreCommitWorkers, SlotsLentToTheOpenRegionAreTakenBackForACommit) {
  KvHarness h;
  HarnessOptions o = with_workers(lending_options(Driver::kPosix));
  o.region_bytes = 256 * 1024;  // 15 chunks: region 0 stays open
  KV_OPEN_OR_SKIP(h, o);
  const auto old = keys_of(12, 5);
  h.put_each(kAlice, old, kBlockChunk);
  ASSERT_EQ(h.store().ssd_stats()->lent_puts, 2u) << "two demotions lent their slots, half the arena";
  const auto resident = h.tiers(old);
  std::vector<proto::KvKey> in_dram;
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (resident[i] == 0) in_dram.push_back(old[i]);
  }
  ASSERT_EQ(in_dram.size(), 2u);
  std::vector<std::uint64_t> leases;
  for (const auto& k : in_dram) {
    const KvStoreCompletion got = h.call(kBob, KvOp::kGet, {&k, 1});
    ASSERT_EQ(got.completion.result1, 1u);
    leases.push_back(got.completion.result0);
  }
  const auto more = keys_of(13, 1);
  const KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, more, kBlockChunk);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  const auto p = payload_of(more[0], kBlockChunk);
  std::memcpy(h.window(kAlice) + begin.locations[0].offset, p.data(), kBlockChunk);
  const KvStoreCompletion commit = h.call(kAlice, KvOp::kPutCommit, more, begin.completion.result0);
  EXPECT_EQ(commit.outcome, KvStatus::kOk);
  EXPECT_EQ(commit.completion.result0, 1u);
  EXPECT_GE(h.store().ssd_stats()->lent_reclaimed, 1u);
  for (const std::uint64_t lease : leases) EXPECT_EQ(h.call(kBob, KvOp::kRelease, {}, lease).outcome, KvStatus::kOk);
  for (const auto& k : old) EXPECT_TRUE(h.get_checked(kBob, k, kBlockChunk));
  EXPECT_TRUE(h.get_checked(kBob, more[0], kBlockChunk));
  ASSERT_TRUE(h.store().flush());
}

// A commit that waits for slots lent to regions being written is answered
// once their writes complete; one that goes with its client counts what it
// stored already as puts, the rest as aborts.
TEST(KvStoreCommitWorkers, ACommitWaitsForSlotsOfRegionsBeingWritten) {
  KvHarness h;
  HarnessOptions o = with_workers(holding_writes(lending_options(Driver::kPosix)));
  KV_OPEN_OR_SKIP(h, o);
  // 4 DRAM slots: the first two demotions lend their slots, the next two
  // are copied; the fourth fills region 0, which is sealed (its writes held).
  const auto old = keys_of(14, 6);
  h.put_each(kAlice, old, kBlockChunk);
  const auto resident = h.tiers(old);
  std::vector<std::uint64_t> leases;
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (resident[i] != 0) continue;
    const KvStoreCompletion got = h.call(kBob, KvOp::kGet, std::span(old).subspan(i, 1));
    ASSERT_EQ(got.completion.result1, 1u);
    leases.push_back(got.completion.result0);
  }
  ASSERT_EQ(leases.size(), 2u);
  if (h.store().ssd_writes_in_flight() == 0) GTEST_SKIP() << "the lent slots' region is not being written";
  const auto more = keys_of(15, 1);
  const KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, more, kBlockChunk);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  const auto p = payload_of(more[0], kBlockChunk);
  std::memcpy(h.window(kAlice) + begin.locations[0].offset, p.data(), kBlockChunk);
  const std::uint64_t commit = h.submit(kAlice, KvOp::kPutCommit, more, begin.completion.result0);
  EXPECT_EQ(h.store().commits_in_flight(), 1u) << "it waits for the region's write";
  h.drain();  // hands the held writes out
  const KvStoreCompletion done = h.wait(kAlice, commit);
  EXPECT_EQ(done.outcome, KvStatus::kOk);
  EXPECT_EQ(done.completion.result0, 1u);
  for (const std::uint64_t lease : leases) EXPECT_EQ(h.call(kBob, KvOp::kRelease, {}, lease).outcome, KvStatus::kOk);
  EXPECT_TRUE(h.get_checked(kBob, more[0], kBlockChunk));
}

TEST(KvStoreCommitWorkers, AWaitingCommitThatGoesCountsWhatItStored) {
  KvHarness h;
  HarnessOptions o = with_workers();
  o.dram_slots = 3;
  KV_OPEN_OR_SKIP(h, o);
  const auto c = keys_of(17, 2);
  const auto e = keys_of(18, 2);
  const std::uint64_t rc = begin_and_write(h, kAlice, c);
  const std::uint64_t re = begin_and_write(h, kBob, e);
  // e's first key is stored (and leased) before e's commit: it counts; its
  // second finds the free slots taken by c's copies in flight and waits.
  ASSERT_EQ(h.put(kAlice, std::span(e).first(1)).completion.result0, 1u);
  const KvStoreCompletion lease = h.call(kAlice, KvOp::kGet, std::span(e).first(1));
  ASSERT_EQ(lease.completion.result1, 1u);
  const std::uint64_t puts = h.store().counters().puts;
  const std::uint64_t aborts = h.store().counters().put_aborts;
  const std::uint64_t commit_c = h.submit(kAlice, KvOp::kPutCommit, c, rc);
  (void)h.submit(kBob, KvOp::kPutCommit, e, re);
  ASSERT_EQ(h.store().commits_in_flight(), 2u);
  h.store().remove_client(kBob);
  EXPECT_EQ(h.store().counters().puts, puts + 1) << "the key stored before counts";
  EXPECT_EQ(h.store().counters().put_aborts, aborts + 1);
  EXPECT_EQ(h.wait(kAlice, commit_c).completion.result0, 2u);
  EXPECT_EQ(h.call(kAlice, KvOp::kRelease, {}, lease.completion.result0).outcome, KvStatus::kOk);
}

TEST(KvStoreCommitWorkers, ChunksWithoutASlotWaitForTheCommitsOwnCopies) {
  KvHarness h;
  HarnessOptions o = with_workers();
  o.dram_slots = 2;
  KV_OPEN_OR_SKIP(h, o);
  // Four chunks over two slots: the last two find no slot at submit and
  // are committed on the loop once the first two are in (evicting them),
  // as a commit without workers does.
  const auto keys = keys_of(8, 4);
  const std::uint64_t rid = begin_and_write(h, kAlice, keys);
  const KvStoreCompletion done = h.call(kAlice, KvOp::kPutCommit, keys, rid);
  EXPECT_EQ(done.outcome, KvStatus::kOk);
  EXPECT_EQ(done.completion.result0, 4u);
  EXPECT_EQ(h.store().counters().commit_copies_offloaded, 1u);  // the first chunk was copied at submit
  EXPECT_TRUE(h.get_checked(kBob, keys[2]));
  EXPECT_TRUE(h.get_checked(kBob, keys[3]));
  const KvStoreCounters& c = h.store().counters();
  EXPECT_EQ(c.tiers[0].used_bytes, c.tiers[0].chunks * kSlot);
}

TEST(KvStoreCommitWorkers, SameKeyCommittedByTwoClientsKeepsOneSlot) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, with_workers());
  const auto keys = keys_of(9, 3);
  const std::uint64_t ra = begin_and_write(h, kAlice, keys);
  const std::uint64_t rb = begin_and_write(h, kBob, keys);
  const std::uint64_t ca = h.submit(kAlice, KvOp::kPutCommit, keys, ra);
  const std::uint64_t cb = h.submit(kBob, KvOp::kPutCommit, keys, rb);
  EXPECT_EQ(h.store().commits_in_flight(), 2u);
  // Whichever finishes second finds the keys stored: they count for both.
  EXPECT_EQ(h.wait(kAlice, ca).completion.result0, 3u);
  EXPECT_EQ(h.wait(kBob, cb).completion.result0, 3u);
  const KvStoreCounters& c = h.store().counters();
  EXPECT_EQ(c.tiers[0].chunks, 3u);
  EXPECT_EQ(c.tiers[0].used_bytes, 3 * kSlot);
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kAlice, k));
}

TEST(KvStoreCommitWorkers, TheCallerRunsCopiesNoWorkerTookYet) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, with_workers({}, 1));
  EXPECT_EQ(h.store().run_commit_copies(8), 0u);  // no commit in flight
  const auto keys = keys_of(12, 8);
  const std::uint64_t rid = begin_and_write(h, kAlice, keys);
  const std::uint64_t commit = h.submit(kAlice, KvOp::kPutCommit, keys, rid);
  // However many the worker took meanwhile, the rest run here.
  EXPECT_LE(h.store().run_commit_copies(8), 8u);
  EXPECT_EQ(h.wait(kAlice, commit).completion.result0, 8u);
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kBob, k));
  KvHarness none;
  KV_OPEN_OR_SKIP(none, with_workers({}, 0));
  const std::uint64_t rid0 = begin_and_write(none, kAlice, keys);
  const std::uint64_t commit0 = none.submit(kAlice, KvOp::kPutCommit, keys, rid0);
  EXPECT_EQ(none.store().run_commit_copies(8), 0u);  // copied at submit
  EXPECT_EQ(none.wait(kAlice, commit0).completion.result0, 8u);
}

TEST(KvStoreCommitWorkers, FlushFinishesCommitsInFlight) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, with_workers());
  const auto keys = keys_of(10, 5);
  const std::uint64_t rid = begin_and_write(h, kAlice, keys);
  const std::uint64_t commit = h.submit(kAlice, KvOp::kPutCommit, keys, rid);
  ASSERT_TRUE(h.store().flush());
  EXPECT_EQ(h.store().commits_in_flight(), 0u);
  EXPECT_EQ(h.wait(kAlice, commit).completion.result0, 5u);
}

TEST(KvStoreCommitWorkers, LargeChunksAreCutIntoPiecesOfWholePages) {
  constexpr std::uint32_t kMiB = 1 << 20;
  EXPECT_EQ(copy_piece_bytes(2 * kMiB, 0), 2 * kMiB) << "no worker: the caller copies it whole";
  EXPECT_EQ(copy_piece_bytes(kMinCopyPiece, 8), kMinCopyPiece) << "too short for two pieces";
  EXPECT_EQ(copy_piece_bytes(2 * kMinCopyPiece, 1), kMinCopyPiece);
  EXPECT_EQ(copy_piece_bytes(2 * kMiB, 3), kMiB / 2);  // three workers and the caller
  const std::uint32_t five = copy_piece_bytes(2 * kMiB, 4);
  EXPECT_EQ(five % 4096, 0u);
  EXPECT_EQ((2 * kMiB + five - 1) / five, 5u);
  EXPECT_EQ(copy_piece_bytes(64 * kMiB, 64), 4 * kMiB) << "at most kMaxCopyPieces pieces";
  const std::uint32_t odd = copy_piece_bytes(kMiB + 4096, 2);  // the last piece is shorter
  EXPECT_EQ(odd % 4096, 0u);
  EXPECT_EQ((kMiB + 4096 + odd - 1) / odd, 3u);
}

// However the sizes fall, a chunk never becomes more pieces than the
// workers plus one, kMaxCopyPieces, or whole kMinCopyPiece shares allow,
// and every piece but the last starts and ends on a page.
TEST(KvStoreCommitWorkers, PieceCountsNeverExceedTheirBound) {
  std::vector<std::uint64_t> sizes;
  constexpr std::uint64_t kPiece = kMinCopyPiece;
  for (const std::uint64_t base :
       std::vector<std::uint64_t>{kPiece, 2 * kPiece, 5 * kPiece, 16 * kPiece, 17 * kPiece, 2 << 20, 64 << 20}) {
    for (const std::uint64_t r : std::vector<std::uint64_t>{0, 1, 15, 4095, 4096, 4097}) {
      sizes.push_back(base + r);
      sizes.push_back(base - r);
    }
  }
  sizes.push_back((4ull << 30) - 4096);  // the largest slot the store takes
  for (const std::uint64_t size : sizes) {
    const auto bytes = static_cast<std::uint32_t>(size);
    for (std::size_t threads : {0, 1, 2, 3, 4, 7, 15, 16, 64}) {
      const std::uint32_t piece = copy_piece_bytes(bytes, threads);
      ASSERT_GT(piece, 0u);
      const std::uint64_t pieces = (size + piece - 1) / piece;
      const std::uint64_t bound =
          std::max<std::uint64_t>(1, std::min<std::uint64_t>({threads + 1, size / kMinCopyPiece, kMaxCopyPieces}));
      EXPECT_LE(pieces, bound) << size << " bytes, " << threads << " workers";
      if (pieces > 1) {
        EXPECT_EQ(piece % 4096, 0u) << size << " bytes, " << threads << " workers";
      }
    }
  }
}

// Chunks of several pieces: the pieces copy on several threads and their
// CRCs combine into the chunk's, which a peer's pin reports and the SSD
// log's writes from the lent slots carry (the log checks it on the reads).
TEST(KvStoreCommitWorkers, ChunksCopiedInPiecesKeepTheirBytesAndCrc) {
  constexpr std::uint32_t kBigChunk = 1 << 20;
  HarnessOptions o = lending_options(Driver::kPosix);
  o.config.slot_bytes = kBigChunk;
  o.config.commit_workers = 3;  // four pieces of 256 KiB
  o.region_bytes = 4 * kBigChunk;
  o.window_slots = 4;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(500, 3);
  h.put_each(kAlice, keys, kBigChunk);
  // Each commit: one piece on this thread, three on the workers.
  EXPECT_EQ(h.store().counters().commit_copies_offloaded, 3u * keys.size());
  for (const auto& k : keys) {
    const KvResult<KvPeerPin> pin = h.store().pin_for_peer(h.ns(), k);
    ASSERT_EQ(pin.outcome, KvStatus::kOk);
    EXPECT_TRUE(pin.value.crc_known);
    EXPECT_EQ(pin.value.crc, crc32c(payload_of(k, kBigChunk)));
    h.store().unpin_for_peer(k);
  }
  // More chunks push these out to the log, written from their slots.
  h.put_each(kAlice, keys_of(501, 4), kBigChunk);
  h.drain();
  EXPECT_GE(h.store().ssd_stats()->lent_puts, 1u);
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kBob, k, kBigChunk));
  EXPECT_EQ(h.store().ssd_stats()->corrupt_dropped, 0u);
}

// Many workers, chunks that are not whole pages (cut into the most pieces,
// the last one short), and more chunks in one commit than DRAM has slots:
// the ones that find no slot wait for the commit's own copies, then copy on
// the loop. Every chunk committed is stored, byte for byte.
TEST(KvStoreCommitWorkers, OddSizedChunksInManyPiecesAllArrive) {
  constexpr std::uint32_t kBigSlot = (4u << 20) + 4096;
  constexpr std::uint32_t kOddChunk = (4u << 20) + 1;  // 16 pieces of 65 pages, the last shorter
  HarnessOptions o;
  o.config.slot_bytes = kBigSlot;
  o.config.commit_workers = 15;
  o.dram_slots = 2;
  o.window_slots = 3;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const std::uint32_t piece = copy_piece_bytes(kOddChunk, 15);
  ASSERT_EQ(piece, 65u * 4096);
  ASSERT_EQ((kOddChunk + piece - 1) / piece, kMaxCopyPieces);
  const auto keys = keys_of(700, 3);
  const KvStoreCompletion done = h.put(kAlice, keys, kOddChunk);
  ASSERT_EQ(done.outcome, KvStatus::kOk);
  // The third chunk found no slot: with no lower tier, evicting the
  // first two made room for it, so it is the one still in DRAM.
  EXPECT_EQ(done.completion.result0, 3u);
  EXPECT_TRUE(h.get_checked(kBob, keys[2], kOddChunk));
  EXPECT_EQ(h.store().commits_in_flight(), 0u);
}

// A store over larger slots, so that copies are still queued when the
// client goes, and a put window of its own mapping, unmapped right after
// remove_client(): a copy that touched it later would fault.
class KvStoreCommitWorkersLarge : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kBig = 1 << 20;
  static constexpr std::size_t kWindowSlots = 24;
  static constexpr KvClientId kCarol = 3;

  void SetUp() override {
    KvStoreConfig c = HarnessOptions::default_config();
    c.slot_bytes = kBig;
    c.commit_workers = 2;
    dram_ = Area(2 * kWindowSlots * kBig);
    auto s = KvStore::create(c, {dram_.span(), {}}, nullptr);
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
    auto ns = store_->open_namespace(test_spec());
    ASSERT_TRUE(ns);
    ns_ = *ns;
  }

  std::span<std::byte> map_window() {
    void* p = ::mmap(nullptr, kWindowSlots * kBig, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    return {static_cast<std::byte*>(p), kWindowSlots * kBig};
  }

  proto::KvRequest request(KvOp op, std::size_t keys, std::uint64_t param0) {
    proto::KvRequest r;
    r.request_id = ++next_id_;
    r.op = static_cast<std::uint8_t>(op);
    r.count = static_cast<std::uint32_t>(keys);
    r.namespace_id = ns_;
    r.param0 = param0;
    return r;
  }

  // put_begin of kWindowSlots chunks (written) and their commit submitted.
  void commit_window(KvClientId client, std::span<std::byte> window, std::uint64_t seq) {
    const auto keys = keys_of(seq, kWindowSlots);
    store_->submit(client, request(KvOp::kPutBegin, keys.size(), kBig), keys);
    std::vector<KvStoreCompletion> out;
    store_->poll(out);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].outcome, KvStatus::kOk);
    std::memset(window.data(), static_cast<int>(seq), window.size());
    store_->submit(client, request(KvOp::kPutCommit, keys.size(), out[0].completion.result0), keys);
  }

  Area dram_;
  std::unique_ptr<KvStore> store_;
  std::uint32_t ns_ = 0;
  std::uint64_t next_id_ = 0;
};

TEST_F(KvStoreCommitWorkersLarge, ClientGoneWhileCopiesRunLeaksNothing) {
  const std::span<std::byte> window = map_window();
  ASSERT_TRUE(store_->add_client(kCarol, window));
  commit_window(kCarol, window, 11);
  EXPECT_EQ(store_->commits_in_flight(), 1u);
  store_->remove_client(kCarol);
  ASSERT_EQ(::munmap(window.data(), window.size()), 0);
  EXPECT_EQ(store_->commits_in_flight(), 0u);
  const KvStoreCounters& c = store_->counters();
  EXPECT_EQ(c.reservations, 0u);
  EXPECT_EQ(c.put_aborts, kWindowSlots);
  EXPECT_EQ(c.tiers[0].used_bytes, 0u);  // every slot the commit took is back
  EXPECT_EQ(c.tiers[0].chunks, 0u);
  // Copies that were running when it went come back and are ignored; no
  // completion of the gone client comes out.
  for (int i = 0; i < 100; ++i) {
    std::vector<KvStoreCompletion> out;
    store_->poll(out);
    for (const auto& done : out) EXPECT_NE(done.client, kCarol);
    ::usleep(100);
  }
  // Another client can take every slot.
  Area other(kWindowSlots * kBig);
  ASSERT_TRUE(store_->add_client(kAlice, other.span()));
  commit_window(kAlice, other.span(), 12);
  std::vector<KvStoreCompletion> out;
  for (int i = 0; i < 20000 && out.empty(); ++i) {
    store_->poll(out);
    ::usleep(50);
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].completion.result0, kWindowSlots);
  EXPECT_EQ(store_->counters().tiers[0].used_bytes, kWindowSlots * kBig);
}

TEST_F(KvStoreCommitWorkersLarge, StoreDestroyedWhileCopiesRun) {
  Area window(kWindowSlots * kBig);
  ASSERT_TRUE(store_->add_client(kAlice, window.span()));
  commit_window(kAlice, window.span(), 13);
  EXPECT_EQ(store_->commits_in_flight(), 1u);
  // Queued copies are dropped, running ones finish, the threads are
  // joined; nothing is left behind (the sanitizers' builds check).
  store_.reset();
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
