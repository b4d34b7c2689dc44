// SPDX-License-Identifier: Apache-2.0
// put_commit with declared checksums (kKvPutCommitChecksums): the writer
// sends each chunk's CRC-32C after its keys. The copy behind the answer
// needs no CRC pass before it and checks the declared CRC; so do the copies
// that take a CRC anyway (into DRAM slots the SSD log may borrow), on the
// commit workers and on the store's own thread. A chunk that does not
// match is not stored. A DRAM-only copy before the answer takes no CRC and
// ignores the declared one.
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

HarnessOptions options(std::uint32_t commit_workers, std::uint64_t copy_behind_min_bytes, bool lending = false) {
  HarnessOptions o = lending ? lending_options() : HarnessOptions{};
  o.config.commit_workers = commit_workers;
  o.config.copy_behind_min_bytes = copy_behind_min_bytes;
  o.window_owners = true;
  return o;
}

std::uint32_t crc_of(const proto::KvKey& key, std::uint32_t bytes = kChunk) {
  const auto p = payload_of(key, bytes);
  return crc32c(p);
}

// put_begin of `keys`, their payloads written: the reservation id.
std::uint64_t begin_written(KvHarness& h, std::span<const proto::KvKey> keys, std::uint32_t bytes = kChunk) {
  const KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, keys, bytes);
  EXPECT_EQ(begin.outcome, KvStatus::kOk);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto p = payload_of(keys[i], bytes);
    std::memcpy(h.window(kAlice) + begin.locations[i].offset, p.data(), bytes);
  }
  return begin.completion.result0;
}

// The commit of `keys` declaring `crcs`, as the ring carries it.
KvStoreCompletion commit_declared(KvHarness& h, std::uint64_t rid, std::span<const proto::KvKey> keys,
                                  std::span<const std::uint32_t> crcs, std::uint16_t flags = 0) {
  std::vector<proto::KvKey> records(keys.begin(), keys.end());
  proto::kv_append_checksums(crcs, records);
  return h.call(kAlice, KvOp::kPutCommit, records, rid, keys.size(), flags | proto::kKvPutCommitChecksums);
}

class KvStoreDeclaredCrc : public ::testing::TestWithParam<int> {
 protected:
  // 0: no commit workers, 1: workers with copies before the answer, both
  // into DRAM slots the SSD log may borrow (block-sized chunks); 2:
  // workers, copies behind the answer (DRAM only).
  HarnessOptions path_options() const {
    switch (GetParam()) {
      case 0: return options(0, 0, true);
      case 1: return options(2, 0, true);
      default: return options(2, 4096);
    }
  }
  bool behind() const { return GetParam() == 2; }
  std::uint32_t bytes() const { return behind() ? kChunk : kBlockChunk; }
};

TEST_P(KvStoreDeclaredCrc, AChunkThatMatchesItsDeclaredCrcIsStored) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, path_options());
  const auto keys = keys_of(950, 3);
  const std::uint64_t rid = begin_written(h, keys, bytes());
  const std::vector<std::uint32_t> crcs{crc_of(keys[0], bytes()), crc_of(keys[1], bytes()), crc_of(keys[2], bytes())};
  const KvStoreCompletion committed = commit_declared(h, rid, keys, crcs);
  EXPECT_EQ(committed.outcome, KvStatus::kOk);
  EXPECT_EQ(committed.completion.result0, 3u);
  ASSERT_TRUE(h.store().flush());
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kBob, k, bytes()));
  EXPECT_EQ(h.store().counters().put_checksum_mismatch, 0u);
  EXPECT_EQ(h.store().counters().puts_copied_behind, behind() ? 3u : 0u);
}

TEST_P(KvStoreDeclaredCrc, AChunkWhoseBytesDoNotMatchIsNeverServedAndItsSlotComesBack) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, path_options());
  const auto keys = keys_of(951, 3);
  const std::uint64_t rid = begin_written(h, keys, bytes());
  // The middle chunk's declared CRC is not its bytes'.
  const std::vector<std::uint32_t> crcs{crc_of(keys[0], bytes()), crc_of(keys[1], bytes()) ^ 1u, crc_of(keys[2], bytes())};
  const KvStoreCompletion committed = commit_declared(h, rid, keys, crcs);
  EXPECT_EQ(committed.outcome, KvStatus::kOk);
  // Behind the answer the mismatch is found after it: the answer counts it.
  EXPECT_EQ(committed.completion.result0, behind() ? 3u : 2u);
  // (A get waits for a copy behind the answer.)
  EXPECT_TRUE(h.get_checked(kBob, keys[0], bytes()));
  EXPECT_FALSE(h.get_checked(kBob, keys[1], bytes()));
  EXPECT_TRUE(h.get_checked(kBob, keys[2], bytes()));
  EXPECT_EQ(h.store().counters().put_checksum_mismatch, 1u);
  EXPECT_EQ(h.store().counters().put_window_changed, 0u);
  // No DRAM slot was lost: the arena holds the 2 chunks stored and as
  // many more as it has slots left.
  ASSERT_EQ(h.store().counters().tiers[0].chunks, 2u);
  EXPECT_TRUE(h.dram_slots_all_back(kAlice, 952, bytes()));
}

std::string path_name(const ::testing::TestParamInfo<int>& info) {
  static const char* const kNames[] = {"inline", "workers", "behind"};
  return kNames[info.param];
}

INSTANTIATE_TEST_SUITE_P(Paths, KvStoreDeclaredCrc, ::testing::Values(0, 1, 2), path_name);

TEST(KvStoreDeclaredCrcRequest, NonZeroUnusedLanesAreRefusedAndLeaveTheReservation) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, options(2, 4096));
  const auto key = keys_of(954, 1)[0];
  const std::uint64_t rid = begin_written(h, {&key, 1});
  std::vector<proto::KvKey> records{key};
  const std::uint32_t crcs[4] = {crc_of(key), 0, 7, 0};  // lane 2 is past the one key
  proto::kv_append_checksums(crcs, records);
  const KvStoreCompletion bad =
      h.call(kAlice, KvOp::kPutCommit, records, rid, 1, proto::kKvPutCommitChecksums);
  EXPECT_EQ(bad.outcome, KvStatus::kInvalid);
  // The reservation is still there: committed without checksums now.
  EXPECT_EQ(h.call(kAlice, KvOp::kPutCommit, {&key, 1}, rid).completion.result0, 1u);
  ASSERT_TRUE(h.store().flush());
  EXPECT_TRUE(h.get_checked(kBob, key));
}

// Before the answer (copied inline or on the workers), a commit whose only
// chunk mismatches fails; behind it the answer comes first (cases above).
TEST(KvStoreDeclaredCrcRequest, ACommitWhoseOnlyChunkMismatchesFailsWithAChecksumError) {
  for (const std::uint32_t workers : {0u, 2u}) {
    SCOPED_TRACE(workers);
    KvHarness h;
    KV_OPEN_OR_SKIP(h, options(workers, 0, true));
    const auto key = keys_of(953, 1)[0];
    const std::uint64_t rid = begin_written(h, {&key, 1}, kBlockChunk);
    const std::uint32_t wrong = crc_of(key, kBlockChunk) + 1;
    const KvStoreCompletion committed = commit_declared(h, rid, {&key, 1}, {&wrong, 1});
    EXPECT_EQ(committed.outcome, KvStatus::kChecksumError);
    EXPECT_EQ(committed.completion.result0, 0u);
    EXPECT_FALSE(h.get_checked(kBob, key, kBlockChunk));
    // The key can be put again, right this time.
    h.put_each(kAlice, {&key, 1}, kBlockChunk);
    EXPECT_TRUE(h.get_checked(kBob, key, kBlockChunk));
  }
}

// A commit that stores none of its chunks answers another chunk's failure
// before a checksum mismatch (which cxlpool_kv_put takes as chunks not
// stored): here a key that was stored at put_begin and deleted since.
TEST(KvStoreDeclaredCrcRequest, AnotherFailureOutranksAMismatchInTheAnswer) {
  for (const std::uint32_t workers : {0u, 2u}) {
    SCOPED_TRACE(workers);
    KvHarness h;
    KV_OPEN_OR_SKIP(h, options(workers, 0, true));
    const auto keys = keys_of(958, 2);  // keys[1] is stored first
    h.put_each(kAlice, {&keys[1], 1}, kBlockChunk);
    const KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, keys, kBlockChunk);
    ASSERT_EQ(begin.outcome, KvStatus::kOk);
    ASSERT_NE(begin.locations[1].flags & proto::kKvLocationCached, 0);
    const auto p = payload_of(keys[0], kBlockChunk);
    std::memcpy(h.window(kAlice) + begin.locations[0].offset, p.data(), kBlockChunk);
    ASSERT_EQ(h.call(kAlice, KvOp::kDelete, {&keys[1], 1}).completion.result0, 1u);
    const std::uint32_t crcs[2] = {crc_of(keys[0], kBlockChunk) ^ 4u, 0};
    const KvStoreCompletion committed = commit_declared(h, begin.completion.result0, keys, crcs);
    EXPECT_EQ(committed.completion.result0, 0u);
    EXPECT_EQ(committed.outcome, KvStatus::kNotFound) << "not the mismatch of the first chunk";
    EXPECT_EQ(h.store().counters().put_checksum_mismatch, 1u);
  }
}

// A DRAM-only store copying before its answer takes no CRC: the declared
// one is not used, and the chunk is the copy the store made.
TEST(KvStoreDeclaredCrcRequest, ADramOnlyCopyBeforeTheAnswerIgnoresTheDeclaredCrc) {
  for (const std::uint32_t workers : {0u, 2u}) {
    SCOPED_TRACE(workers);
    KvHarness h;
    KV_OPEN_OR_SKIP(h, options(workers, 0));
    const auto key = keys_of(956, 1)[0];
    const std::uint64_t rid = begin_written(h, {&key, 1});
    const std::uint32_t wrong = crc_of(key) + 1;
    EXPECT_EQ(commit_declared(h, rid, {&key, 1}, {&wrong, 1}).completion.result0, 1u);
    EXPECT_TRUE(h.get_checked(kBob, key));
    EXPECT_EQ(h.store().counters().put_checksum_mismatch, 0u);
  }
}

// A writer with other puts under way is not waiting for this commit alone:
// it is copied before the answer (a commit with no other reservation open
// is copied behind it).
TEST(KvStoreDeclaredCrcRequest, AWriterWithOtherPutsUnderWayIsCopiedBeforeTheAnswer) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, options(2, 4096));
  const auto keys = keys_of(957, 2);
  const std::uint64_t first = begin_written(h, {&keys[0], 1});
  const std::uint64_t second = begin_written(h, {&keys[1], 1});
  const std::uint32_t crcs[2] = {crc_of(keys[0]), crc_of(keys[1])};
  EXPECT_EQ(commit_declared(h, first, {&keys[0], 1}, {&crcs[0], 1}).completion.result0, 1u);
  EXPECT_EQ(h.store().counters().puts_copied_behind, 0u) << "the second reservation was open";
  EXPECT_EQ(commit_declared(h, second, {&keys[1], 1}, {&crcs[1], 1}).completion.result0, 1u);
  EXPECT_EQ(h.store().counters().puts_copied_behind, 1u);
  ASSERT_TRUE(h.store().flush());
  for (const auto& k : keys) EXPECT_TRUE(h.get_checked(kBob, k));
}

// Behind the answer the declared CRC stands in for the daemon's: the copy
// checks it, so window bytes other than the declared ones (changed before
// the commit) are dropped, where a CRC pass of the daemon's would have
// matched them.
TEST(KvStoreDeclaredCrcRequest, BehindTheAnswerTheCopyChecksTheDeclaredCrc) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, options(2, 4096));
  const auto key = keys_of(955, 1)[0];
  const KvStoreCompletion begin = h.call(kAlice, KvOp::kPutBegin, {&key, 1}, kChunk);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  auto p = payload_of(key);
  const std::uint32_t declared = crc32c(p);
  p[100] ^= std::byte{1};
  std::memcpy(h.window(kAlice) + begin.locations[0].offset, p.data(), kChunk);
  EXPECT_EQ(commit_declared(h, begin.completion.result0, {&key, 1}, {&declared, 1}).completion.result0, 1u);
  EXPECT_EQ(h.store().counters().puts_copied_behind, 1u);
  ASSERT_TRUE(h.store().flush());
  EXPECT_EQ(h.store().counters().put_checksum_mismatch, 1u);
  EXPECT_EQ(h.call(kBob, KvOp::kLookup, {&key, 1}).completion.result0, 0u);
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
