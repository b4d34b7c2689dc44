// SPDX-License-Identifier: Apache-2.0
// Chunks that move between the daemons of a pod: a chunk pinned for a
// peer stays where it is (not evicted, its slot not reused even when it is
// deleted) until it is unpinned; a slot reserved for a fetch is in no index
// until its chunk is committed, and goes back when cancelled or when the
// key arrived meanwhile; a namespace a peer's copy needs is created from its
// fingerprint alone and is the one a client's open of the spec finds.
#include <cstring>

#include "cxlpool/common/crc32c.hpp"
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

TEST(KvStorePeers, PinnedChunkStaysUntilUnpinned) {
  KvHarness h;
  HarnessOptions o;
  o.dram_slots = 4;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(1, 1);
  h.put_each(kAlice, keys);
  EXPECT_EQ(h.store().cached_prefix(h.ns(), keys), 1u);
  auto pin = h.store().pin_for_peer(h.ns(), keys[0]);
  ASSERT_TRUE(pin.ok());
  EXPECT_EQ(pin->tier, KvTier::kDram);
  EXPECT_EQ(pin->length, kChunk);
  const auto payload = payload_of(keys[0]);
  EXPECT_EQ(std::memcmp(h.arena(0) + pin->offset, payload.data(), kChunk), 0);

  // Filling DRAM evicts everything but the pinned chunk.
  h.put_each(kAlice, keys_of(2, 8));
  EXPECT_EQ(h.store().cached_prefix(h.ns(), keys), 1u);
  EXPECT_EQ(std::memcmp(h.arena(0) + pin->offset, payload.data(), kChunk), 0);
  // Deleted while pinned: gone for lookups, its slot still untouched.
  EXPECT_EQ(h.call(kAlice, KvOp::kDelete, keys).completion.result0, 1u);
  EXPECT_EQ(h.store().cached_prefix(h.ns(), keys), 0u);
  h.put_each(kAlice, keys_of(3, 8));
  EXPECT_EQ(std::memcmp(h.arena(0) + pin->offset, payload.data(), kChunk), 0);
  // Unpinned: the slot is free again and used.
  h.store().unpin_for_peer(keys[0]);
  const auto more = keys_of(4, 4);
  h.put_each(kAlice, more);
  EXPECT_EQ(h.store().cached_prefix(h.ns(), more), 4u);
}

TEST(KvStorePeers, OnlyArenaChunksOfTheNamespaceArePinned) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, HarnessOptions{});
  const auto keys = keys_of(1, 2);
  h.put_each(kAlice, keys);
  auto other = h.store().open_namespace(test_spec("other-model"));
  ASSERT_TRUE(other);
  EXPECT_EQ(h.store().pin_for_peer(*other, keys[0]).status(), KvStatus::kNotFound);
  EXPECT_EQ(h.store().pin_for_peer(h.ns(), keys_of(9, 1)[0]).status(), KvStatus::kNotFound);
  EXPECT_EQ(h.store().cached_prefix(*other, keys), 0u);
  const auto fp = h.store().fingerprint_of(h.ns());
  ASSERT_TRUE(fp);
  EXPECT_EQ(h.store().namespace_of(*fp), h.ns());
  EXPECT_FALSE(h.store().fingerprint_of(999));
}

TEST(KvStorePeers, FetchedChunkIsServedLikeAPutOne) {
  KvHarness h;
  HarnessOptions o;
  o.dram_slots = 2;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(5, 1);
  auto slot = h.store().reserve_fetch_slot(h.ns());
  ASSERT_TRUE(slot.ok());
  // Not indexed yet: a get misses it.
  EXPECT_EQ(h.call(kAlice, KvOp::kGet, keys).completion.result1, 0u);
  const auto payload = payload_of(keys[0]);
  std::memcpy(h.arena(0) + *slot, payload.data(), kChunk);
  const uint32_t crc = crc32c(payload);
  EXPECT_EQ(h.store().commit_fetch_slot(h.ns(), keys[0], *slot, kChunk, crc), KvStatus::kOk);
  EXPECT_TRUE(h.get_checked(kAlice, keys[0]));
  // The key is there: a second fetch of it gives its slot back.
  auto again = h.store().reserve_fetch_slot(h.ns());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(h.store().commit_fetch_slot(h.ns(), keys[0], *again, kChunk, crc), KvStatus::kOk);
  auto third = h.store().reserve_fetch_slot(h.ns());
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, *again);
  h.store().cancel_fetch_slot(*third);
  EXPECT_EQ(h.store().commit_fetch_slot(h.ns(), keys_of(6, 1)[0], *h.store().reserve_fetch_slot(h.ns()), 0, 0),
            KvStatus::kInvalid);
}

TEST(KvStorePeers, NamespaceForAPeerIsCreatedByFingerprint) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, HarnessOptions{});
  const auto fp = h.store().fingerprint_of(h.ns());
  ASSERT_TRUE(fp);
  EXPECT_EQ(h.store().namespace_for_peer(*fp), h.ns());  // known: the same id
  const NamespaceSpec spec = test_spec("replicated-model");
  const NamespaceFingerprint other = fingerprint(spec);
  EXPECT_FALSE(h.store().namespace_of(other));
  const auto id = h.store().namespace_for_peer(other);
  ASSERT_TRUE(id);
  EXPECT_NE(*id, h.ns());
  EXPECT_EQ(h.store().namespace_of(other), id);
  // A chunk copied into it is there for the client that opens the spec.
  auto slot = h.store().reserve_fetch_slot(*id);
  ASSERT_TRUE(slot.ok());
  const auto keys = keys_of(11, 1);
  EXPECT_EQ(h.store().commit_fetch_slot(*id, keys[0], *slot, kChunk, 0), KvStatus::kOk);
  EXPECT_EQ(h.store().open_namespace(spec), *id);
  EXPECT_EQ(h.store().cached_prefix(*id, keys), 1u);
}

TEST(KvStorePeers, NoSlotWhenEveryChunkIsLeased) {
  KvHarness h;
  HarnessOptions o;
  o.dram_slots = 2;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(7, 2);
  h.put_each(kAlice, keys);
  auto lease = h.call(kAlice, KvOp::kGet, keys);
  ASSERT_EQ(lease.completion.result1, 2u);
  EXPECT_EQ(h.store().reserve_fetch_slot(h.ns()).status(), KvStatus::kRejected);
  EXPECT_EQ(h.store().reserve_fetch_slot(999).status(), KvStatus::kNotFound);
  EXPECT_EQ(h.call(kAlice, KvOp::kRelease, {}, lease.completion.result0).outcome, KvStatus::kOk);
  EXPECT_TRUE(h.store().reserve_fetch_slot(h.ns()).ok());
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
