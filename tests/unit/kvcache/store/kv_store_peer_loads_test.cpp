// SPDX-License-Identifier: Apache-2.0
// A peer's pin of chunks the store keeps only on SSD (pin_for_peer_loading):
// they are read into arena slots and pinned, the answer waits for the
// reads, a chunk without a slot or whose read fails its checksum ends the
// prefix, and every chunk answered stays put until the peer unpins it.
#include <cstring>

#include "cxlpool/common/crc32c.hpp"
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

class KvStorePeerLoads : public KvStoreOverSsd {
 protected:
  // Two DRAM slots, no CXL, every demoted chunk admitted to SSD.
  HarnessOptions options() const { return ssd_options(GetParam(), 2); }
  // Puts `keys` one by one (all but the last two end up SSD-only), then
  // seals the region so that reads go to the device.
  void put_on_device(std::span<const proto::KvKey> keys) {
    ASSERT_NO_FATAL_FAILURE(h_.put_each(kAlice, keys));
    ASSERT_TRUE(h_.store().flush());
  }
  // Polls until the answer of `ticket` is out.
  KvPeerLoad wait(std::uint64_t ticket) {
    std::vector<KvPeerLoad> out;
    for (int i = 0; i < 200000; ++i) {
      h_.store().take_peer_loads(out);
      for (auto& l : out) {
        if (l.ticket == ticket) return std::move(l);
      }
      out.clear();
      std::vector<KvStoreCompletion> done;
      h_.store().poll(done);
      for (auto& c : done) h_.stray().push_back(std::move(c));
      ::usleep(50);
    }
    ADD_FAILURE() << "no answer for peer pin " << ticket;
    return {};
  }
  // Whether pin `p` shows key k's payload where the store put it.
  bool shows(const KvPeerPin& p, const proto::KvKey& k) {
    const auto want = payload_of(k);
    return p.length == kChunk && std::memcmp(h_.arena(static_cast<std::uint16_t>(p.tier)) + p.offset, want.data(), kChunk) == 0;
  }
};

TEST_P(KvStorePeerLoads, SsdChunksAreReadIntoArenaSlotsAndPinned) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(500, 3);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  ASSERT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 0, 0}));
  const std::uint64_t ticket = h_.store().pin_for_peer_loading(h_.ns(), std::span(keys).first(1));
  EXPECT_NE(ticket, 0u);
  const KvPeerLoad load = wait(ticket);
  ASSERT_EQ(load.pins.size(), 1u);
  ASSERT_EQ(load.keys.size(), 1u);
  EXPECT_EQ(load.keys[0], keys[0]);
  EXPECT_EQ(load.pins[0].tier, KvTier::kDram);
  EXPECT_TRUE(load.pins[0].loaded);
  EXPECT_TRUE(shows(load.pins[0], keys[0]));
  if (load.pins[0].crc_known) {
    EXPECT_EQ(load.pins[0].crc, crc32c(payload_of(keys[0])));
  }
  // Pinned: a get of the other chunks cannot take its slot.
  EXPECT_EQ(h_.tiers(std::span(keys).first(1)), (std::vector<std::uint16_t>{0}));
  ASSERT_EQ(h_.put(kAlice, keys_of(501, 1)).completion.result0, 1u);
  EXPECT_TRUE(shows(load.pins[0], keys[0]));
  h_.store().unpin_for_peer(keys[0]);
  expect_no_slot_leaked();
}

TEST_P(KvStorePeerLoads, ResidentChunksAnswerAtOnceAndAMissIsEmpty) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(510, 2);
  ASSERT_NO_FATAL_FAILURE(h_.put_each(kAlice, keys));
  const std::uint64_t ticket = h_.store().pin_for_peer_loading(h_.ns(), keys);
  std::vector<KvPeerLoad> out;
  h_.store().take_peer_loads(out);  // no poll: nothing had to be read
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ticket, ticket);
  ASSERT_EQ(out[0].pins.size(), 2u);
  EXPECT_FALSE(out[0].pins[0].loaded);
  EXPECT_TRUE(shows(out[0].pins[1], keys[1]));
  for (const auto& k : keys) h_.store().unpin_for_peer(k);

  out.clear();
  const auto other = keys_of(511, 2);
  const std::uint64_t miss = h_.store().pin_for_peer_loading(h_.ns(), other);
  h_.store().take_peer_loads(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ticket, miss);
  EXPECT_TRUE(out[0].pins.empty());
  out.clear();
  (void)h_.store().pin_for_peer_loading(h_.ns() + 100, keys);  // an unknown namespace
  h_.store().take_peer_loads(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].pins.empty());
}

TEST_P(KvStorePeerLoads, APrefixWithoutSlotsEndsWhereTheyRunOut) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(520, 5);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  ASSERT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2, 2, 0, 0}));
  // Both DRAM slots leased by a client: no slot for any read.
  auto lease = h_.call(kBob, KvOp::kGet, std::span(keys).subspan(3));
  ASSERT_EQ(lease.completion.result1, 2u);
  const KvPeerLoad none = wait(h_.store().pin_for_peer_loading(h_.ns(), keys));
  EXPECT_TRUE(none.pins.empty());
  ASSERT_EQ(h_.call(kBob, KvOp::kRelease, {}, lease.completion.result0).outcome, KvStatus::kOk);
  // Two slots for three SSD chunks: the first two are answered.
  const KvPeerLoad two = wait(h_.store().pin_for_peer_loading(h_.ns(), std::span(keys).first(3)));
  ASSERT_EQ(two.pins.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(two.pins[i].loaded);
    EXPECT_TRUE(shows(two.pins[i], keys[i]));
  }
  for (const auto& k : two.keys) h_.store().unpin_for_peer(k);
  h_.drain();
  expect_no_slot_leaked();
}

TEST_P(KvStorePeerLoads, AChecksumMismatchEndsThePrefixThere) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(530, 4);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  ASSERT_EQ(h_.tiers(keys), (std::vector<std::uint16_t>{2, 2, 0, 0}));
  // Region 0: its header block, then the first entry's header block and
  // payload.
  h_.flip_ssd_byte(2 * kSsdBlockBytes + 1234);
  const KvPeerLoad load = wait(h_.store().pin_for_peer_loading(h_.ns(), std::span(keys).first(2)));
  EXPECT_TRUE(load.pins.empty()) << "the prefix ends at the chunk that failed its checksum";
  EXPECT_EQ(h_.store().cached_prefix(h_.ns(), keys), 0u) << "the torn chunk left the index";
  EXPECT_EQ(h_.store().cached_prefix(h_.ns(), std::span(keys).subspan(1)), 3u);
  EXPECT_EQ(h_.store().ssd_stats()->corrupt_dropped, 1u);
  // The next chunk, read meanwhile, was let go: a peer asking from there
  // gets it.
  h_.drain();
  const KvPeerLoad rest = wait(h_.store().pin_for_peer_loading(h_.ns(), std::span(keys).subspan(1, 1)));
  ASSERT_EQ(rest.pins.size(), 1u);
  EXPECT_TRUE(shows(rest.pins[0], keys[1]));
  for (const auto& k : rest.keys) h_.store().unpin_for_peer(k);
}

TEST_P(KvStorePeerLoads, AClientGoneDoesNotCancelAPeersLoad) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(540, 3);
  ASSERT_NO_FATAL_FAILURE(put_on_device(keys));
  const std::uint64_t ticket = h_.store().pin_for_peer_loading(h_.ns(), std::span(keys).first(1));
  h_.store().remove_client(kAlice);
  const KvPeerLoad load = wait(ticket);
  ASSERT_EQ(load.pins.size(), 1u);
  EXPECT_TRUE(shows(load.pins[0], keys[0]));
  h_.store().unpin_for_peer(keys[0]);
}

INSTANTIATE_TEST_SUITE_P(Drivers, KvStorePeerLoads, ::testing::Values(Driver::kPosix, Driver::kUring), driver_name);

}  // namespace
}  // namespace cxlpool::kvcache::testing
