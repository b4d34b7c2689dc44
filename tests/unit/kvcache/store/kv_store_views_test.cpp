// SPDX-License-Identifier: Apache-2.0
// Tenant isolation in the store engine: a request sees only its own
// namespace's chunks whatever keys it sends, and with per-namespace slot
// memory every chunk is written into its namespace's view, the previous
// holder's bytes going when a slot changes namespace.
#include <unistd.h>

#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

// Views on the heap; assign() zeroes the previous holder's range as the
// daemon's hole punch does.
class HeapViews final : public KvSlotMemory {
 public:
  HeapViews(std::size_t dram_slots, std::size_t cxl_slots) : slots_{dram_slots, cxl_slots} {
    holders_[0].assign(dram_slots, 0);
    holders_[1].assign(cxl_slots, 0);
  }
  std::byte* slot(KvTier tier, std::uint64_t offset, std::uint32_t ns) override {
    return view(ns, tier) + offset;
  }
  void assign(KvTier tier, std::uint64_t offset, std::uint32_t ns) override {
    const auto t = static_cast<std::size_t>(tier);
    std::uint32_t& held = holders_[t][offset / kSlot];
    if (held != 0 && held != ns) {
      std::memset(view(held, tier) + offset, 0, kSlot);
      ++punches;
    }
    held = ns;
    ++assigns;
  }
  std::byte* view(std::uint32_t ns, KvTier tier) {
    auto& a = views_[{ns, static_cast<int>(tier)}];
    if (a.data() == nullptr) a = Area(slots_[static_cast<std::size_t>(tier)] * kSlot);
    return a.data();
  }
  std::uint32_t holder(KvTier tier, std::uint64_t offset) const {
    return holders_[static_cast<std::size_t>(tier)][offset / kSlot];
  }
  int punches = 0;
  int assigns = 0;

 private:
  std::size_t slots_[2];
  std::vector<std::uint32_t> holders_[2];
  std::map<std::pair<std::uint32_t, int>, Area> views_;
};

bool view_holds(HeapViews& views, std::uint32_t ns, const proto::KvLocation& loc, const proto::KvKey& key) {
  const auto p = payload_of(key);
  return std::memcmp(views.view(ns, static_cast<KvTier>(loc.tier)) + loc.offset, p.data(), kChunk) == 0;
}

bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

// Tenant A (the harness's own namespace) and tenant B, their chunks in
// per-namespace views of the DRAM and CXL slots.
class KvStoreTenantViews : public ::testing::Test {
 protected:
  // A store with this many DRAM and CXL slots, each tenant's in its views.
  HarnessOptions view_options(std::size_t dram_slots, std::size_t cxl_slots) {
    views_.emplace(dram_slots, cxl_slots);
    HarnessOptions o;
    o.dram_slots = dram_slots;
    o.cxl_slots = cxl_slots;
    o.memory = &*views_;
    return o;
  }
  // Once the store is up: B's namespace beside A's.
  void open_tenant_b() {
    a_ = h_.ns();
    auto b = h_.store().open_namespace(test_spec("tenant-b"));
    ASSERT_TRUE(b);
    b_ = *b;
  }

  std::optional<HeapViews> views_;
  KvHarness h_;
  std::uint32_t a_ = 0;
  std::uint32_t b_ = 0;
};

TEST(KvStoreIsolation, AnotherNamespacesKeysFindNothing) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, HarnessOptions{});
  auto other = h.store().open_namespace(test_spec("other-model"));
  ASSERT_TRUE(other);
  const auto keys = keys_of(1, 3);
  ASSERT_EQ(h.put(kAlice, keys).completion.result0, 3u);

  // Bob sends Alice's keys under his own namespace: a miss everywhere.
  auto lookup = h.call(kBob, proto::KvOp::kLookup, keys, 0, 0, 0, *other);
  EXPECT_EQ(lookup.outcome, KvStatus::kOk);
  EXPECT_EQ(lookup.completion.result0, 0u);
  EXPECT_TRUE(lookup.locations.empty());
  auto get = h.call(kBob, proto::KvOp::kGet, keys, 0, 0, 0, *other);
  EXPECT_EQ(get.outcome, KvStatus::kOk);
  EXPECT_EQ(get.completion.result0, 0u) << "no lease";
  EXPECT_TRUE(get.locations.empty());
  auto prefetch = h.call(kBob, proto::KvOp::kPrefetch, keys, 0, 0, 0, *other);
  EXPECT_EQ(prefetch.completion.result0, 0u);
  auto del = h.call(kBob, proto::KvOp::kDelete, keys, 0, 0, 0, *other);
  EXPECT_EQ(del.completion.result0, 0u);
  // A put of those keys is not told they exist: a window slot per key, and
  // the commit counts them without replacing Alice's chunks.
  auto begin = h.call(kBob, proto::KvOp::kPutBegin, keys, kChunk, 0, 0, *other);
  ASSERT_EQ(begin.outcome, KvStatus::kOk);
  for (const auto& loc : begin.locations) EXPECT_EQ(loc.flags & proto::kKvLocationCached, 0u);
  for (const auto& loc : begin.locations) std::memset(h.window(kBob) + loc.offset, 0xee, kChunk);
  auto commit = h.call(kBob, proto::KvOp::kPutCommit, keys, begin.completion.result0, 0, 0, *other);
  EXPECT_EQ(commit.outcome, KvStatus::kOk);
  EXPECT_EQ(commit.completion.result0, 3u);

  // Alice's chunks are untouched and still hers.
  auto mine = h.call(kAlice, proto::KvOp::kGet, keys);
  ASSERT_EQ(mine.locations.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(h.holds(mine.locations[i], keys[i]));
  // A prefix that runs into another namespace's chunk ends there.
  const auto bobs = keys_of(2, 1);
  ASSERT_EQ(h.put(kBob, bobs, kChunk, *other).completion.result0, 1u);
  const std::vector<proto::KvKey> mixed{bobs[0], keys[0]};
  EXPECT_EQ(h.call(kBob, proto::KvOp::kLookup, mixed, 0, 0, 0, *other).completion.result0, 1u);
}

TEST_F(KvStoreTenantViews, ChunksAreWrittenIntoTheirNamespacesView) {
  KV_OPEN_OR_SKIP(h_, view_options(2, 0));
  ASSERT_NO_FATAL_FAILURE(open_tenant_b());

  const auto ka = keys_of(1, 2);
  ASSERT_EQ(h_.put(kAlice, ka).completion.result0, 2u);
  auto got = h_.call(kAlice, proto::KvOp::kLookup, ka);
  ASSERT_EQ(got.locations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(view_holds(*views_, a_, got.locations[i], ka[i]));
    EXPECT_EQ(views_->holder(KvTier::kDram, got.locations[i].offset), a_);
    EXPECT_TRUE(all_zero(views_->view(b_, KvTier::kDram) + got.locations[i].offset, kChunk))
        << "nothing of A's in B's view";
  }
  EXPECT_TRUE(all_zero(h_.arena(0), 2 * kSlot)) << "the arena itself is never written";
  EXPECT_EQ(views_->punches, 0);

  // B's puts evict A's chunks (two slots, no lower tier): each slot moves
  // from A to B, and A's view loses the bytes there.
  std::vector<std::uint64_t> a_offsets;
  for (const auto& loc : got.locations) a_offsets.push_back(loc.offset);
  const auto kb = keys_of(2, 2);
  ASSERT_EQ(h_.put(kBob, kb, kChunk, b_).completion.result0, 2u);
  EXPECT_EQ(views_->punches, 2);
  EXPECT_EQ(h_.call(kAlice, proto::KvOp::kLookup, ka).completion.result0, 0u) << "A's chunks were evicted";
  auto theirs = h_.call(kBob, proto::KvOp::kLookup, kb, 0, 0, 0, b_);
  ASSERT_EQ(theirs.locations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(view_holds(*views_, b_, theirs.locations[i], kb[i]));
    EXPECT_EQ(views_->holder(KvTier::kDram, theirs.locations[i].offset), b_);
  }
  for (const std::uint64_t off : a_offsets) {
    EXPECT_TRUE(all_zero(views_->view(a_, KvTier::kDram) + off, kSlot)) << "A's view was punched at " << off;
  }

  // A slot going back to the namespace that last held it costs no punch.
  const int punches = views_->punches;
  ASSERT_EQ(h_.call(kBob, proto::KvOp::kDelete, kb, 0, 0, 0, b_).completion.result0, 2u);
  const auto kb2 = keys_of(3, 2);
  ASSERT_EQ(h_.put(kBob, kb2, kChunk, b_).completion.result0, 2u);
  EXPECT_EQ(views_->punches, punches);
  EXPECT_TRUE(all_zero(h_.arena(0), 2 * kSlot)) << "the arena itself is never written";
}

TEST_F(KvStoreTenantViews, DemotionsAndPromotionsMoveChunksWithinTheirView) {
  KV_OPEN_OR_SKIP(h_, view_options(1, 2));
  ASSERT_NO_FATAL_FAILURE(open_tenant_b());
  const auto ka = keys_of(1, 1);
  const auto kb = keys_of(2, 1);
  ASSERT_EQ(h_.put(kAlice, ka).completion.result0, 1u);
  ASSERT_EQ(h_.put(kBob, kb, kChunk, b_).completion.result0, 1u);  // A's chunk goes down to CXL
  auto where = h_.call(kAlice, proto::KvOp::kLookup, ka);
  ASSERT_EQ(where.locations.size(), 1u);
  EXPECT_EQ(where.locations[0].tier, 1);
  EXPECT_TRUE(view_holds(*views_, a_, where.locations[0], ka[0]));
  EXPECT_TRUE(all_zero(views_->view(b_, KvTier::kCxl), 2 * kSlot)) << "B's CXL view holds nothing";
  // A get promotes it back into DRAM, into A's view; B's chunk goes to CXL.
  auto got = h_.call(kAlice, proto::KvOp::kGet, ka);
  ASSERT_EQ(got.locations.size(), 1u);
  EXPECT_EQ(got.locations[0].tier, 0);
  EXPECT_TRUE(view_holds(*views_, a_, got.locations[0], ka[0]));
  auto bs = h_.call(kBob, proto::KvOp::kLookup, kb, 0, 0, 0, b_);
  ASSERT_EQ(bs.locations.size(), 1u);
  EXPECT_EQ(bs.locations[0].tier, 1);
  EXPECT_TRUE(view_holds(*views_, b_, bs.locations[0], kb[0]));
  EXPECT_TRUE(all_zero(views_->view(b_, KvTier::kDram), kSlot)) << "B's DRAM view was punched";
  EXPECT_TRUE(all_zero(h_.arena(0), kSlot));
  EXPECT_TRUE(all_zero(h_.arena(1), 2 * kSlot));
}

// Gets each key of namespace ns (blockwise chunks) and checks that it lands
// whole in ns's view of its DRAM slot, which ns holds; returns how many
// were on SSD before their get.
std::size_t read_back_in_view(KvHarness& h, HeapViews& views, KvClientId client,
                              const std::vector<proto::KvKey>& keys, std::uint32_t ns) {
  std::size_t from_ssd = 0;
  for (const auto& k : keys) {
    const auto before = h.call(client, proto::KvOp::kLookup, {&k, 1}, 0, 0, 0, ns);
    EXPECT_EQ(before.locations.size(), 1u);
    from_ssd += !before.locations.empty() && before.locations[0].tier == 2 ? 1 : 0;
    auto got = h.call(client, proto::KvOp::kGet, {&k, 1}, 0, 0, 0, ns);
    EXPECT_EQ(got.outcome, KvStatus::kOk);
    if (got.locations.size() != 1) {
      ADD_FAILURE() << "no chunk for a key";
      continue;
    }
    const auto p = payload_of(k, kBlockChunk);
    EXPECT_EQ(std::memcmp(views.slot(KvTier::kDram, got.locations[0].offset, ns), p.data(), kBlockChunk), 0);
    EXPECT_EQ(views.holder(KvTier::kDram, got.locations[0].offset), ns);
    EXPECT_EQ(h.call(client, proto::KvOp::kRelease, {}, got.completion.result0, 0, 0, ns).outcome, KvStatus::kOk);
  }
  return from_ssd;
}

// SSD demotions written from a lent slot and SSD reads back into a slot go
// through the chunk's namespace view.
TEST(KvStoreIsolation, SsdWritesAndReadsUseTheNamespacesView) {
  HeapViews views(4, 0);
  HarnessOptions o = lending_options();
  o.memory = &views;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(40, 10);
  ASSERT_NO_FATAL_FAILURE(h.put_each(kAlice, keys, kBlockChunk));
  ASSERT_NO_FATAL_FAILURE(h.drain());
  EXPECT_GE(h.store().ssd_stats()->lent_puts, 1u) << "some demotion was written from its slot";
  const std::size_t from_ssd = read_back_in_view(h, views, kAlice, keys, h.ns());
  EXPECT_GE(from_ssd, 6u);
  EXPECT_TRUE(all_zero(h.arena(0), 4 * kSlot)) << "the arena itself is never written";
}

// Over io_uring each slot is a registered buffer in the view of the
// namespace that claimed it last: as slots pass between two namespaces and
// back, every demotion is written from, and every SSD read lands in, the
// right view (a registration left on the old view would write the old
// holder's pages to the log and read into pages no view has any more).
TEST(KvStoreIsolation, SlotsAreRegisteredInTheViewOfTheirNamespace) {
  HeapViews views(4, 0);
  HarnessOptions o = lending_options(Driver::kUring);
  o.memory = &views;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  auto other = h.store().open_namespace(test_spec("tenant-b"));
  ASSERT_TRUE(other);
  const std::uint32_t a = h.ns(), b = *other;
  const auto a_keys = keys_of(50, 8), b_keys = keys_of(60, 8);
  for (std::size_t i = 0; i < a_keys.size(); ++i) {
    ASSERT_EQ(h.put(kAlice, {&a_keys[i], 1}, kBlockChunk).completion.result0, 1u);
    ASSERT_EQ(h.put(kBob, {&b_keys[i], 1}, kBlockChunk, b).completion.result0, 1u);
  }
  ASSERT_NO_FATAL_FAILURE(h.drain());
  EXPECT_GE(h.store().ssd_stats()->lent_puts, 1u) << "some demotion was written from its slot";
  const KvStoreCounters& c = h.store().counters();
  const std::uint64_t after_puts = c.ssd_registrations;
  EXPECT_GE(after_puts, 4u) << "every slot was registered for a namespace";
  std::size_t from_ssd = read_back_in_view(h, views, kAlice, a_keys, a);
  from_ssd += read_back_in_view(h, views, kBob, b_keys, b);
  EXPECT_GE(from_ssd, 8u);
  EXPECT_GT(c.ssd_registrations, after_puts) << "slots passed to the other namespace and were registered again";
  EXPECT_EQ(c.ssd_registration_errors, 0u);
  EXPECT_TRUE(all_zero(h.arena(0), 4 * kSlot)) << "the arena itself is never written";
}

// A slot registration the kernel refuses turns the tier's registrations
// off and lets go of every slot registered so far (one left behind would
// pin pages its view punches); the store goes on with unregistered I/O.
TEST(KvStoreIsolation, ARefusedSlotRegistrationLetsGoOfTheTiersSlots) {
  HeapViews views(4, 0);
  HarnessOptions o = lending_options(Driver::kUring);
  o.memory = &views;
  o.faulty = true;
  o.fault.fill_updates_allowed = 2;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(80, 10);
  ASSERT_NO_FATAL_FAILURE(h.put_each(kAlice, keys, kBlockChunk));
  ASSERT_NO_FATAL_FAILURE(h.drain());
  const KvStoreCounters& c = h.store().counters();
  EXPECT_EQ(c.ssd_registrations, 2u);
  EXPECT_EQ(c.ssd_registration_errors, 1u) << "one refusal, then no more tries";
  EXPECT_EQ(h.store().ssd_registration_refusal(), "injected: buffer registration refused") << "kept for the daemon's log";
  const hal::BlockDevice& device = *h.faulty();
  const std::byte* view = views.view(h.ns(), KvTier::kDram);
  for (std::size_t i = 0; i < device.registered_buffer_count(); ++i) {
    const auto* base = static_cast<const std::byte*>(device.registered_buffer(i).iov_base);
    EXPECT_FALSE(base >= view && base < view + 4 * kSlot) << "buffer " << i << " still holds a slot";
  }
  EXPECT_GE(read_back_in_view(h, views, kAlice, keys, h.ns()), 1u);
}

// A table of slots the kernel refuses at start (a memlock limit that holds
// the log's own buffers and no more) is one refusal, whatever smaller
// tables are tried after it; the log keeps its own buffers registered and
// the slots go unregistered.
TEST(KvStoreIsolation, ARefusedSlotTableAtStartIsOneRefusal) {
  HeapViews views(4, 0);
  HarnessOptions o = lending_options(Driver::kUring);
  o.memory = &views;
  o.faulty = true;
  o.fault.max_registered_buffers = 64;  // the log's region and staging buffers, not the 4096 window places
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const KvStoreCounters& at_start = h.store().counters();
  EXPECT_EQ(at_start.ssd_registration_errors, 1u);
  EXPECT_EQ(h.store().ssd_registration_refusal(), "injected: buffer table refused");
  EXPECT_GT(h.faulty()->registered_buffer_count(), 0u) << "the log's own buffers stay registered";
  const auto keys = keys_of(90, 10);
  ASSERT_NO_FATAL_FAILURE(h.put_each(kAlice, keys, kBlockChunk));
  ASSERT_NO_FATAL_FAILURE(h.drain());
  const KvStoreCounters& c = h.store().counters();
  EXPECT_EQ(c.ssd_registrations, 0u);
  EXPECT_EQ(c.ssd_registration_errors, 1u) << "no slot was tried after the table was refused";
  EXPECT_GE(read_back_in_view(h, views, kAlice, keys, h.ns()), 1u);
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
