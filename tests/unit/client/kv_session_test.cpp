// SPDX-License-Identifier: Apache-2.0
// libcxlpool's KV data path against an in-process fake of the daemon's KV
// service: mappings and pointers, blocking helpers next to asynchronous
// requests (a helper never takes an asynchronous completion), the eventfd
// protocol, several threads at once, a daemon that breaks the ring or goes
// away, and leases given back at close.
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "cxlpool/kv.hpp"
#include "support/fake_kv_daemon.hpp"

namespace {

using cxlpool::test::FakeKvDaemon;
constexpr uint8_t kGet = CXLPOOL_KV_GET;

class ClientKvSession : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cxlpool_connect(daemon_.socket_path().c_str(), "kv-test", &client_), 0) << cxlpool_last_error();
    ASSERT_EQ(cxlpool_kv_open(client_, nullptr, &kv_), 0) << cxlpool_last_error();
    const cxlpool_kv_namespace_spec spec{"model", "layout", "bf16", 0, 1, 16};
    ASSERT_EQ(cxlpool_kv_namespace_open(kv_, &spec, &ns_), 0) << cxlpool_last_error();
  }
  void TearDown() override {
    cxlpool_kv_close(kv_);
    cxlpool_disconnect(client_);
  }

  std::vector<cxlpool_kv_key> keys(size_t n, uint64_t salt = 0) {
    std::vector<cxlpool_kv_key> k(n);
    for (size_t i = 0; i < n; ++i) k[i] = {i + 1 + salt * 1000, 0xabcdef00 + salt};
    return k;
  }
  // Stores n chunks of `bytes` filled with (salt + i) through the put helper.
  void put(const std::vector<cxlpool_kv_key>& k, uint32_t bytes, uint8_t salt) {
    std::vector<std::vector<unsigned char>> data(k.size());
    std::vector<const void*> ptrs(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      data[i].assign(bytes, static_cast<unsigned char>(salt + i));
      ptrs[i] = data[i].data();
    }
    ASSERT_EQ(cxlpool_kv_put(kv_, ns_.id, k.data(), static_cast<uint32_t>(k.size()), ptrs.data(), bytes),
              static_cast<int>(k.size()))
        << cxlpool_last_error();
  }

  FakeKvDaemon daemon_;
  cxlpool_client* client_ = nullptr;
  cxlpool_kv* kv_ = nullptr;
  cxlpool_kv_namespace ns_{};
};

TEST_F(ClientKvSession, OpenReportsTheStore) {
  cxlpool_kv_info info{};
  ASSERT_EQ(cxlpool_kv_get_info(kv_, &info), 0);
  EXPECT_EQ(info.slot_bytes, FakeKvDaemon::kSlotBytes);
  EXPECT_EQ(info.put_window_bytes, FakeKvDaemon::kSlotBytes * FakeKvDaemon::kWindowSlots);
  EXPECT_EQ(info.arena_bytes[0], FakeKvDaemon::kSlotBytes * FakeKvDaemon::kArenaSlots);
  EXPECT_EQ(info.arena_bytes[1], FakeKvDaemon::kSlotBytes * FakeKvDaemon::kArenaSlots);
  EXPECT_EQ(info.tier_bandwidth_bps[0], 20'000'000'000ull);
  EXPECT_EQ(ns_.id, 5u);
  EXPECT_EQ(ns_.chunk_tokens, 16u);
  EXPECT_GE(cxlpool_kv_eventfd(kv_), 0);
  EXPECT_EQ(cxlpool_kv_in_flight(kv_), 0u);
}

TEST_F(ClientKvSession, PutThenGetReadsTheBytesInPlace) {
  const auto k = keys(3);
  put(k, 5000, 10);
  cxlpool_kv_location locs[4];
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 3, locs), 3);
  uint64_t lease = 0;
  auto more = k;
  more.push_back({999, 999});  // not stored: the prefix stops before it
  ASSERT_EQ(cxlpool_kv_get(kv_, ns_.id, more.data(), 4, &lease, locs), 3) << cxlpool_last_error();
  EXPECT_NE(lease, 0u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(locs[i].data, nullptr);
    EXPECT_EQ(locs[i].tier, CXLPOOL_KV_TIER_DRAM);
    EXPECT_EQ(locs[i].length, 5000u);
    const auto* bytes = static_cast<const unsigned char*>(locs[i].data);
    EXPECT_EQ(bytes[0], 10 + i);
    EXPECT_EQ(bytes[4999], 10 + i);
    // The pointer is the arena's, where the daemon keeps the chunk.
    EXPECT_EQ(std::memcmp(locs[i].data, daemon_.dram_slot(locs[i].offset / FakeKvDaemon::kSlotBytes, 5000).data(), 5000),
              0);
  }
  EXPECT_EQ(daemon_.leases_held(), 1u);
  EXPECT_EQ(cxlpool_kv_release(kv_, lease), 0);
  EXPECT_EQ(daemon_.leases_held(), 0u);
  EXPECT_EQ(cxlpool_kv_release(kv_, lease), -ENOENT);
  EXPECT_EQ(cxlpool_kv_release(kv_, 0), 0);  // an empty get's lease
  // A second put of the same keys finds them cached and writes nothing.
  put(k, 5000, 77);
  ASSERT_EQ(cxlpool_kv_get(kv_, ns_.id, k.data(), 1, &lease, locs), 1);
  EXPECT_EQ(static_cast<const unsigned char*>(locs[0].data)[0], 10);
  EXPECT_EQ(cxlpool_kv_release(kv_, lease), 0);
  EXPECT_EQ(cxlpool_kv_delete(kv_, ns_.id, k.data(), 3), 3);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 3, nullptr), 0);
}

TEST_F(ClientKvSession, ReleaseNowaitQueuesTheReleaseAndDropsItsAnswer) {
  const auto k = keys(2, 7);
  put(k, 300, 4);
  uint64_t lease = 0;
  cxlpool_kv_location locs[2];
  ASSERT_EQ(cxlpool_kv_get(kv_, ns_.id, k.data(), 2, &lease, locs), 2) << cxlpool_last_error();
  EXPECT_EQ(cxlpool_kv_release_nowait(kv_, lease), 0) << cxlpool_last_error();
  // Not an asynchronous request of the caller's: nothing to reap.
  EXPECT_EQ(cxlpool_kv_in_flight(kv_), 0u);
  // The daemon takes requests in order: the release went first.
  EXPECT_EQ(cxlpool_kv_release(kv_, lease), -ENOENT);
  EXPECT_EQ(daemon_.leases_held(), 0u);
  // An unknown lease is not reported, and its answer breaks nothing.
  EXPECT_EQ(cxlpool_kv_release_nowait(kv_, 424242), 0);
  EXPECT_EQ(cxlpool_kv_release_nowait(kv_, 0), 0);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 2, nullptr), 2) << cxlpool_last_error();

  // Next to asynchronous requests: a reap returns theirs only.
  const cxlpool_kv_request get{.user_data = 77, .op = kGet, .flags = 0, .namespace_id = ns_.id, .keys = k.data(),
                               .n_keys = 2, .param0 = 0, .param1 = 0};
  ASSERT_EQ(cxlpool_kv_submit(kv_, &get, 1), 1) << cxlpool_last_error();
  cxlpool_kv_completion c[4];
  int n = 0;
  while (n == 0) n = cxlpool_kv_reap(kv_, c, 4, 1000);
  ASSERT_EQ(n, 1) << cxlpool_last_error();
  EXPECT_EQ(c[0].user_data, 77u);
  EXPECT_EQ(cxlpool_kv_release_nowait(kv_, c[0].result0), 0);
  EXPECT_EQ(cxlpool_kv_reap(kv_, c, 4, 0), 0);

  // More releases than the rings hold, none waited for: the ones that find
  // the rings full wait for room, none fails.
  std::vector<uint64_t> leases;
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(cxlpool_kv_get(kv_, ns_.id, k.data(), 2, &lease, locs), 2) << cxlpool_last_error();
    leases.push_back(lease);
  }
  for (int round = 0; round < 20; ++round) {
    for (const uint64_t l : leases) ASSERT_EQ(cxlpool_kv_release_nowait(kv_, l), 0) << cxlpool_last_error();
  }
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 2, nullptr), 2) << cxlpool_last_error();
  EXPECT_EQ(daemon_.leases_held(), 0u);
}

TEST_F(ClientKvSession, PutBatchesLargerThanTheWindow) {
  // 12 chunks through an 8-slot window: two put_begin/commit rounds.
  const auto k = keys(12, 3);
  put(k, 100, 1);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 12, nullptr), 12);
}

TEST_F(ClientKvSession, ErrorsOfTheHelpers) {
  const auto k = keys(2);
  cxlpool_kv_location slots[2];
  uint64_t reservation = 0;
  EXPECT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, k.data(), 2, FakeKvDaemon::kSlotBytes + 1, &reservation, slots),
            -EMSGSIZE);
  EXPECT_NE(std::string(cxlpool_last_error()), "");
  EXPECT_EQ(cxlpool_kv_put_commit(kv_, ns_.id, 12345, k.data(), 2), -ENOENT);
  const void* data[2] = {nullptr, nullptr};
  EXPECT_EQ(cxlpool_kv_put(kv_, ns_.id, k.data(), 2, data, 10), -EINVAL);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, nullptr, 2, nullptr), -EINVAL);
  EXPECT_EQ(cxlpool_kv_lookup(nullptr, ns_.id, k.data(), 2, nullptr), -EINVAL);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 0, nullptr), 0);
  const cxlpool_kv_request bad{1, 99, 0, ns_.id, k.data(), 2, 0, 0};
  EXPECT_EQ(cxlpool_kv_submit(kv_, &bad, 1), -EINVAL);
  // Still usable after all of these.
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 2, nullptr), 0);
}

TEST_F(ClientKvSession, PutBeginSlotsAreWritableAndCommitPublishes) {
  const auto k = keys(2, 9);
  cxlpool_kv_location slots[2];
  uint64_t reservation = 0;
  ASSERT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, k.data(), 2, 64, &reservation, slots), 0) << cxlpool_last_error();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(slots[i].tier, CXLPOOL_KV_TIER_PUT_WINDOW);
    ASSERT_NE(slots[i].data, nullptr);
    std::memset(slots[i].data, 0x40 + i, 64);
  }
  // Commit only the second: the first is dropped.
  EXPECT_EQ(cxlpool_kv_put_commit(kv_, ns_.id, reservation, &k[1], 1), 1);
  cxlpool_kv_location locs[1];
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, &k[1], 1, locs), 1);
  EXPECT_EQ(static_cast<const unsigned char*>(locs[0].data)[63], 0x41);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, &k[0], 1, locs), 0);
  // Stored now: put_begin marks it cached and gives nothing to write through.
  ASSERT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, &k[1], 1, 64, &reservation, slots), 0);
  EXPECT_NE(slots[0].flags & CXLPOOL_KV_LOC_CACHED, 0);
  EXPECT_EQ(slots[0].data, nullptr);
}

// cxlpool_kv_put declares each chunk's CRC-32C with its commit; a daemon
// that refuses the flag (-EINVAL, older than it) gets the same commit
// without it, and no later one carries it. cxlpool_kv_put_commit_checksums
// and cxlpool_kv_submit send what they are given; a wrong checksum is not
// stored.
TEST_F(ClientKvSession, PutsDeclareChecksumsAndFallBackForADaemonWithoutThem) {
  const auto k = keys(4, 21);
  std::vector<std::vector<unsigned char>> data(4, std::vector<unsigned char>(512));
  for (size_t i = 0; i < data.size(); ++i) std::memset(data[i].data(), static_cast<int>(i + 1), 512);
  const void* ptrs[4] = {data[0].data(), data[1].data(), data[2].data(), data[3].data()};
  ASSERT_EQ(cxlpool_kv_put(kv_, ns_.id, k.data(), 1, ptrs, 512), 1) << cxlpool_last_error();
  EXPECT_EQ(daemon_.last_commit_flags.load(), CXLPOOL_KV_COMMIT_CHECKSUMS);
  EXPECT_EQ(daemon_.checksum_mismatches.load(), 0u);

  // Two-phase, by hand: the second checksum is wrong.
  cxlpool_kv_location slots[2];
  uint64_t reservation = 0;
  ASSERT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, &k[1], 2, 512, &reservation, slots), 0) << cxlpool_last_error();
  uint32_t checksums[2];
  for (int i = 0; i < 2; ++i) checksums[i] = cxlpool_kv_copy_chunk(slots[i].data, data[1 + i].data(), 512);
  checksums[1] += 1;
  EXPECT_EQ(cxlpool_kv_put_commit_checksums(kv_, ns_.id, reservation, &k[1], 2, checksums, 1u << 4, nullptr), -EINVAL)
      << "an unknown flag";
  EXPECT_EQ(cxlpool_kv_put_commit_checksums(kv_, ns_.id, reservation, &k[1], 2, checksums, 0, nullptr), 1)
      << cxlpool_last_error();
  EXPECT_EQ(daemon_.checksum_mismatches.load(), 1u);
  cxlpool_kv_location locs[2];
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, &k[1], 2, locs), 1);

  // Through cxlpool_kv_submit: param1 points at the checksums; the flag
  // with param1 0, or on another op, is refused before anything is sent.
  cxlpool_kv_request r{};
  r.op = CXLPOOL_KV_PUT_COMMIT;
  r.namespace_id = ns_.id;
  r.keys = &k[3];
  r.n_keys = 1;
  r.flags = CXLPOOL_KV_COMMIT_CHECKSUMS;
  EXPECT_EQ(cxlpool_kv_submit(kv_, &r, 1), -EINVAL);
  r.op = CXLPOOL_KV_GET;
  r.param1 = reinterpret_cast<uintptr_t>(checksums);
  EXPECT_EQ(cxlpool_kv_submit(kv_, &r, 1), -EINVAL);
  // A real one: two chunks, the second declared wrong, then both right.
  for (const bool right : {false, true}) {
    const auto pair = keys(2, right ? 24 : 23);
    ASSERT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, pair.data(), 2, 512, &reservation, slots), 0) << cxlpool_last_error();
    for (int i = 0; i < 2; ++i) checksums[i] = cxlpool_kv_copy_chunk(slots[i].data, data[i].data(), 512);
    if (!right) checksums[1] ^= 1;
    const uint64_t before = daemon_.checksum_mismatches.load();
    r = cxlpool_kv_request{};
    r.user_data = 77;
    r.op = CXLPOOL_KV_PUT_COMMIT;
    r.flags = CXLPOOL_KV_COMMIT_CHECKSUMS;
    r.namespace_id = ns_.id;
    r.keys = pair.data();
    r.n_keys = 2;
    r.param0 = reservation;
    r.param1 = reinterpret_cast<uintptr_t>(checksums);
    ASSERT_EQ(cxlpool_kv_submit(kv_, &r, 1), 1) << cxlpool_last_error();
    checksums[0] = checksums[1] = 0;  // copied at submit
    cxlpool_kv_completion done{};
    ASSERT_EQ(cxlpool_kv_reap(kv_, &done, 1, -1), 1);
    EXPECT_EQ(done.user_data, 77u);
    EXPECT_EQ(done.status, 0);
    EXPECT_EQ(done.result0, right ? 2u : 1u);
    EXPECT_EQ(daemon_.checksum_mismatches.load(), before + (right ? 0 : 1));
    EXPECT_EQ(daemon_.last_commit_flags.load(), CXLPOOL_KV_COMMIT_CHECKSUMS);
  }

  // Behind a request still in flight the put does not declare: the daemon
  // copies before its answer then.
  cxlpool_kv_request lookup{};
  lookup.op = CXLPOOL_KV_LOOKUP;
  lookup.namespace_id = ns_.id;
  lookup.keys = &k[0];
  lookup.n_keys = 1;
  ASSERT_EQ(cxlpool_kv_submit(kv_, &lookup, 1), 1);
  const auto more = keys(1, 22);
  ASSERT_EQ(cxlpool_kv_put(kv_, ns_.id, more.data(), 1, ptrs, 512), 1) << cxlpool_last_error();
  EXPECT_EQ(daemon_.last_commit_flags.load(), 0);
  cxlpool_kv_completion done[1];
  ASSERT_EQ(cxlpool_kv_reap(kv_, done, 1, -1), 1);

  // A daemon without the flag: the put still stores its chunk, and no
  // later put on the handle tries the flag again.
  daemon_.knows_checksums = false;
  ASSERT_EQ(cxlpool_kv_put(kv_, ns_.id, &k[3], 1, &ptrs[3], 512), 1) << cxlpool_last_error();
  EXPECT_EQ(daemon_.last_commit_flags.load(), 0);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, &k[3], 1, locs), 1);
  daemon_.knows_checksums = true;
  const auto last = keys(1, 25);
  ASSERT_EQ(cxlpool_kv_put(kv_, ns_.id, last.data(), 1, ptrs, 512), 1) << cxlpool_last_error();
  EXPECT_EQ(daemon_.last_commit_flags.load(), 0);
}

// CXLPOOL_KV_COMMIT_TO_SSD reaches the daemon's put_commit from the blocking
// helpers and from cxlpool_kv_submit, and result1 comes back as *on_ssd;
// any other bit is refused before anything is sent.
TEST_F(ClientKvSession, CommitToSsdFlagReachesTheDaemon) {
  const auto k = keys(3, 11);
  std::vector<std::vector<unsigned char>> data(3, std::vector<unsigned char>(512, 7));
  const void* ptrs[3] = {data[0].data(), data[1].data(), data[2].data()};
  uint64_t on_ssd = 99;
  // A daemon without an SSD log: committed as usual, none on SSD.
  ASSERT_EQ(cxlpool_kv_put_flags(kv_, ns_.id, k.data(), 1, ptrs, 512, CXLPOOL_KV_COMMIT_TO_SSD, &on_ssd), 1)
      << cxlpool_last_error();
  // cxlpool_kv_put declares its copies' checksums too.
  EXPECT_EQ(daemon_.last_commit_flags.load(), CXLPOOL_KV_COMMIT_TO_SSD | CXLPOOL_KV_COMMIT_CHECKSUMS);
  EXPECT_EQ(on_ssd, 0u);
  // With one: every chunk committed is on SSD only.
  daemon_.ssd_log = true;
  on_ssd = 99;
  ASSERT_EQ(cxlpool_kv_put_flags(kv_, ns_.id, k.data(), 3, ptrs, 512, CXLPOOL_KV_COMMIT_TO_SSD, &on_ssd), 3)
      << cxlpool_last_error();
  EXPECT_EQ(on_ssd, 2u) << "the first chunk was already stored";
  // Without the flag the commit does not ask for it.
  const auto k2 = keys(2, 12);
  on_ssd = 99;
  ASSERT_EQ(cxlpool_kv_put_flags(kv_, ns_.id, k2.data(), 1, ptrs, 512, 0, &on_ssd), 1);
  EXPECT_EQ(daemon_.last_commit_flags.load(), CXLPOOL_KV_COMMIT_CHECKSUMS);
  EXPECT_EQ(on_ssd, 0u);
  // The two-phase form.
  cxlpool_kv_location slot[1];
  uint64_t reservation = 0;
  ASSERT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, &k2[1], 1, 64, &reservation, slot), 0) << cxlpool_last_error();
  std::memset(slot[0].data, 0x5a, 64);
  on_ssd = 99;
  EXPECT_EQ(cxlpool_kv_put_commit_flags(kv_, ns_.id, reservation, &k2[1], 1, CXLPOOL_KV_COMMIT_TO_SSD, &on_ssd), 1);
  EXPECT_EQ(daemon_.last_commit_flags.load(), CXLPOOL_KV_COMMIT_TO_SSD);
  EXPECT_EQ(on_ssd, 1u);
  EXPECT_EQ(cxlpool_kv_put_commit_flags(kv_, ns_.id, reservation, &k2[1], 1, 0, nullptr), -ENOENT)
      << "the reservation ended with its commit";

  // Asynchronous: the flag goes through, result1 comes back.
  const auto k3 = keys(1, 13);
  ASSERT_EQ(cxlpool_kv_put_begin(kv_, ns_.id, k3.data(), 1, 64, &reservation, slot), 0);
  std::memset(slot[0].data, 0x6b, 64);
  const cxlpool_kv_request commit{0xc0u, CXLPOOL_KV_PUT_COMMIT, CXLPOOL_KV_COMMIT_TO_SSD, ns_.id, k3.data(), 1,
                                  reservation, 0};
  ASSERT_EQ(cxlpool_kv_submit(kv_, &commit, 1), 1) << cxlpool_last_error();
  cxlpool_kv_completion c[1];
  ASSERT_EQ(cxlpool_kv_reap(kv_, c, 1, -1), 1);
  EXPECT_EQ(c[0].user_data, 0xc0u);
  EXPECT_EQ(c[0].status, 0);
  EXPECT_EQ(c[0].result0, 1u);
  EXPECT_EQ(c[0].result1, 1u);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k3.data(), 1, nullptr), 1);
}

TEST_F(ClientKvSession, UnknownPutCommitFlagsAreRefused) {
  const auto k = keys(1, 14);
  std::vector<unsigned char> data(64, 1);
  const void* ptrs[1] = {data.data()};
  uint64_t on_ssd = 99;
  const uint64_t commits = daemon_.answered[CXLPOOL_KV_PUT_COMMIT].load();
  const uint64_t begins = daemon_.answered[CXLPOOL_KV_PUT_BEGIN].load();
  for (uint32_t flags : {CXLPOOL_KV_LOOKUP_COST_CUTOFF, 1u << 2, 1u << 16, CXLPOOL_KV_COMMIT_TO_SSD | (1u << 5)}) {
    EXPECT_EQ(cxlpool_kv_put_flags(kv_, ns_.id, k.data(), 1, ptrs, 64, flags, &on_ssd), -EINVAL) << flags;
    EXPECT_EQ(cxlpool_kv_put_commit_flags(kv_, ns_.id, 1, k.data(), 1, flags, &on_ssd), -EINVAL) << flags;
  }
  EXPECT_EQ(on_ssd, 99u) << "left alone on failure";
  // Nothing was sent: not even the put's put_begin.
  EXPECT_EQ(daemon_.answered[CXLPOOL_KV_PUT_BEGIN].load(), begins);
  EXPECT_EQ(daemon_.answered[CXLPOOL_KV_PUT_COMMIT].load(), commits);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 1, nullptr), 0);

  // cxlpool_kv_submit: an unknown bit, or the flag on another op.
  for (const auto& [op, flags] : std::vector<std::pair<uint32_t, uint32_t>>{{CXLPOOL_KV_PUT_COMMIT, 1u << 2},
                                                                            {CXLPOOL_KV_PUT_COMMIT, CXLPOOL_KV_LOOKUP_COST_CUTOFF},
                                                                            {CXLPOOL_KV_PUT_BEGIN, CXLPOOL_KV_COMMIT_TO_SSD},
                                                                            {CXLPOOL_KV_LOOKUP, CXLPOOL_KV_COMMIT_TO_SSD},
                                                                            {CXLPOOL_KV_PUT_COMMIT, 1u << 16}}) {
    const cxlpool_kv_request bad{1, op, flags, ns_.id, k.data(), 1, 64, 0};
    EXPECT_EQ(cxlpool_kv_submit(kv_, &bad, 1), -EINVAL) << op << " " << flags;
  }
  EXPECT_EQ(cxlpool_kv_in_flight(kv_), 0u);
  // Still usable.
  EXPECT_EQ(cxlpool_kv_put_flags(kv_, ns_.id, k.data(), 1, ptrs, 64, CXLPOOL_KV_COMMIT_TO_SSD, nullptr), 1);
}

// The daemon answers an asynchronous get only after a helper's lookup
// arrived, and answers it first: the helper drains it off the ring and must
// leave it for cxlpool_kv_reap, user_data and locations intact.
TEST_F(ClientKvSession, HelperNeverTakesAnAsyncCompletion) {
  const auto k = keys(2, 1);
  put(k, 256, 50);
  daemon_.hold_op = kGet;
  const cxlpool_kv_request get{0xfeedu, CXLPOOL_KV_GET, 0, ns_.id, k.data(), 2, 0, 0};
  ASSERT_EQ(cxlpool_kv_submit(kv_, &get, 1), 1);
  EXPECT_EQ(cxlpool_kv_in_flight(kv_), 1u);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 2, nullptr), 2);
  EXPECT_EQ(daemon_.answered[kGet].load(), 1u);  // answered, and already off the ring
  cxlpool_kv_completion c[4];
  ASSERT_EQ(cxlpool_kv_reap(kv_, c, 4, 0), 1);
  EXPECT_EQ(c[0].user_data, 0xfeedu);
  EXPECT_EQ(c[0].status, 0);
  EXPECT_EQ(c[0].op, CXLPOOL_KV_GET);
  EXPECT_NE(c[0].result0, 0u);
  EXPECT_EQ(c[0].result1, 2u);
  ASSERT_EQ(c[0].n_locations, 2u);
  EXPECT_EQ(static_cast<const unsigned char*>(c[0].locations[1].data)[255], 51);
  EXPECT_EQ(cxlpool_kv_in_flight(kv_), 0u);
  EXPECT_EQ(cxlpool_kv_reap(kv_, c, 4, 0), 0);
  EXPECT_EQ(cxlpool_kv_release(kv_, c[0].result0), 0);
}

TEST_F(ClientKvSession, AsyncBatchesAndTheEventfd) {
  const auto k = keys(4, 2);
  put(k, 128, 0);
  std::vector<cxlpool_kv_request> reqs;
  for (uint64_t i = 0; i < 6; ++i) reqs.push_back({100 + i, CXLPOOL_KV_LOOKUP, 0, ns_.id, k.data(), 4, 0, 0});
  const int queued = cxlpool_kv_submit(kv_, reqs.data(), reqs.size());
  ASSERT_EQ(queued, 6);
  std::vector<uint64_t> seen;
  cxlpool_kv_completion c[8];
  while (seen.size() < 6) {
    const int armed = cxlpool_kv_arm(kv_);
    ASSERT_GE(armed, 0);
    if (armed == 1) {
      pollfd p{cxlpool_kv_eventfd(kv_), POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, 5000), 1) << "eventfd never rang";
    }
    const int n = cxlpool_kv_reap(kv_, c, 8, 0);
    ASSERT_GE(n, 0);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(c[i].status, 0);
      EXPECT_EQ(c[i].result0, 4u);
      seen.push_back(c[i].user_data);
    }
  }
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(seen[i], 100 + i);
  // Nothing in flight: a reap with a timeout returns at once.
  EXPECT_EQ(cxlpool_kv_reap(kv_, c, 8, -1), 0);
}

TEST_F(ClientKvSession, ReapWaitsForTheFirstCompletion) {
  const auto k = keys(1, 4);
  const cxlpool_kv_request r{7, CXLPOOL_KV_LOOKUP, 0, ns_.id, k.data(), 1, 0, 0};
  ASSERT_EQ(cxlpool_kv_submit(kv_, &r, 1), 1);
  cxlpool_kv_completion c[1];
  ASSERT_EQ(cxlpool_kv_reap(kv_, c, 1, 5000), 1);
  EXPECT_EQ(c[0].user_data, 7u);
  EXPECT_EQ(c[0].result0, 0u);
  EXPECT_EQ(c[0].n_locations, 0u);
}

// More requests than the completion ring holds: submit takes what fits,
// helpers wait for room instead of failing.
TEST_F(ClientKvSession, FullRingsMeanEagainForSubmitAndWaitingForHelpers) {
  const auto k = keys(1, 5);
  daemon_.ignore_op = CXLPOOL_KV_PREFETCH;  // these never complete
  std::vector<cxlpool_kv_request> reqs(FakeKvDaemon::kCqEntries + 2,
                                       cxlpool_kv_request{1, CXLPOOL_KV_PREFETCH, 0, ns_.id, k.data(), 1, 0, 0});
  const int queued = cxlpool_kv_submit(kv_, reqs.data(), reqs.size());
  EXPECT_EQ(queued, static_cast<int>(FakeKvDaemon::kCqEntries));
  EXPECT_EQ(cxlpool_kv_submit(kv_, reqs.data(), 1), -EAGAIN);
  EXPECT_EQ(cxlpool_kv_in_flight(kv_), FakeKvDaemon::kCqEntries);
}

TEST_F(ClientKvSession, ThreadsShareOneHandle) {
  const auto k = keys(4, 6);
  put(k, 512, 20);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      cxlpool_kv_location locs[4];
      for (int i = 0; i < 200; ++i) {
        uint64_t lease = 0;
        if (cxlpool_kv_get(kv_, ns_.id, k.data(), 4, &lease, locs) != 4) ++failures;
        if (static_cast<const unsigned char*>(locs[t].data)[0] != 20 + t) ++failures;
        if (cxlpool_kv_release(kv_, lease) != 0) ++failures;
      }
    });
  }
  // Meanwhile this thread runs asynchronous lookups and reaps them.
  size_t reaped = 0;
  for (int i = 0; i < 100; ++i) {
    const cxlpool_kv_request r{static_cast<uint64_t>(i), CXLPOOL_KV_LOOKUP, 0, ns_.id, k.data(), 4, 0, 0};
    while (cxlpool_kv_submit(kv_, &r, 1) == -EAGAIN) {
      cxlpool_kv_completion c[8];
      const int n = cxlpool_kv_reap(kv_, c, 8, 100);
      ASSERT_GE(n, 0);
      reaped += static_cast<size_t>(n);
    }
  }
  while (reaped < 100) {
    cxlpool_kv_completion c[8];
    const int n = cxlpool_kv_reap(kv_, c, 8, 5000);
    ASSERT_GT(n, 0) << "completions lost";
    for (int i = 0; i < n; ++i) EXPECT_EQ(c[i].result0, 4u);
    reaped += static_cast<size_t>(n);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(daemon_.leases_held(), 0u);
}

TEST_F(ClientKvSession, LocationOutsideTheArenaBreaksTheHandle) {
  const auto k = keys(1, 7);
  put(k, 64, 0);
  daemon_.corrupt_next_location = true;
  cxlpool_kv_location locs[1];
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 1, locs), -EPIPE);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns_.id, k.data(), 1, locs), -EPIPE);
  const cxlpool_kv_request r{1, CXLPOOL_KV_LOOKUP, 0, ns_.id, k.data(), 1, 0, 0};
  EXPECT_EQ(cxlpool_kv_submit(kv_, &r, 1), -EPIPE);
}

TEST_F(ClientKvSession, DaemonGoingAwayEndsTheWait) {
  const auto k = keys(1, 8);
  daemon_.ignore_op = CXLPOOL_KV_DELETE;
  std::thread vanish([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    daemon_.disconnect();
  });
  EXPECT_EQ(cxlpool_kv_delete(kv_, ns_.id, k.data(), 1), -ENOTCONN);
  vanish.join();
}

TEST_F(ClientKvSession, CloseReleasesLeases) {
  const auto k = keys(2, 10);
  put(k, 64, 0);
  uint64_t lease1 = 0, lease2 = 0;
  cxlpool_kv_location locs[2];
  ASSERT_EQ(cxlpool_kv_get(kv_, ns_.id, k.data(), 2, &lease1, locs), 2);
  // One lease from an asynchronous get, reaped.
  const cxlpool_kv_request r{1, CXLPOOL_KV_GET, 0, ns_.id, k.data(), 1, 0, 0};
  ASSERT_EQ(cxlpool_kv_submit(kv_, &r, 1), 1);
  cxlpool_kv_completion c[1];
  ASSERT_EQ(cxlpool_kv_reap(kv_, c, 1, 5000), 1);
  lease2 = c[0].result0;
  EXPECT_NE(lease2, 0u);
  EXPECT_EQ(daemon_.leases_held(), 2u);
  cxlpool_kv_close(kv_);
  kv_ = nullptr;
  EXPECT_EQ(daemon_.leases_held(), 0u);
}

// The RAII layer: a lease is released when it goes out of scope.
TEST(ClientKvCxx, RaiiHandles) {
  FakeKvDaemon daemon;
  cxlpool::Client client(daemon.socket_path(), "kv-cxx");
  cxlpool::KvStore store(client);
  const cxlpool::KvNamespace ns = store.open_namespace("model", "layout", "bf16", 0, 1, 16);
  std::vector<uint32_t> tokens(40);
  for (uint32_t i = 0; i < 40; ++i) tokens[i] = i;
  const auto keys = ns.compute_keys(tokens);
  ASSERT_EQ(keys.size(), 2u);  // 8 trailing tokens get no key
  {
    cxlpool::KvReservation reservation = store.put_begin(ns, keys, 100);
    ASSERT_EQ(reservation.size(), 2u);
    for (size_t i = 0; i < 2; ++i) std::memset(reservation.data(i), 'a' + static_cast<int>(i), 100);
    EXPECT_EQ(reservation.commit(), 2u);
    EXPECT_TRUE(reservation.committed());
  }
  std::vector<cxlpool::KvLocation> locs;
  EXPECT_EQ(store.lookup(ns, keys, &locs), 2u);
  ASSERT_EQ(locs.size(), 2u);
  {
    const cxlpool::KvLease lease = store.get(ns, keys);
    ASSERT_EQ(lease.size(), 2u);
    EXPECT_EQ(static_cast<const char*>(lease.data(1))[99], 'b');
    EXPECT_EQ(lease.bytes(0).size(), 100u);
    EXPECT_EQ(daemon.leases_held(), 1u);
  }
  // The destructor does not wait for the release: the daemon takes it
  // before the next request of the handle.
  EXPECT_EQ(store.lookup(ns, keys), 2u);
  EXPECT_EQ(daemon.leases_held(), 0u);
  const std::vector<cxlpool::KvKey> unknown{{1, 2}};
  const cxlpool::KvLease none = store.get(ns, unknown);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.id(), 0u);
  EXPECT_THROW(store.put_begin(ns, keys, uint64_t{1} << 30), std::system_error);
  const void* data[2] = {"x", "y"};
  EXPECT_EQ(store.put(ns, keys, data, 1), 2u);  // both cached already
  EXPECT_EQ(store.erase(ns, keys), 2u);
}

TEST(ClientKvCxx, PutAndCommitToSsd) {
  FakeKvDaemon daemon;
  daemon.ssd_log = true;
  cxlpool::Client client(daemon.socket_path(), "kv-cxx");
  cxlpool::KvStore store(client);
  const cxlpool::KvNamespace ns = store.open_namespace("model", "layout", "bf16", 0, 1, 16);
  const std::vector<cxlpool::KvKey> keys{{1, 2}, {3, 4}, {5, 6}};
  {
    cxlpool::KvReservation reservation = store.put_begin(ns, std::span(keys).first(2), 100);
    for (size_t i = 0; i < 2; ++i) std::memset(reservation.data(i), 'a', 100);
    EXPECT_EQ(reservation.on_ssd(), 0u);
    EXPECT_EQ(reservation.commit(cxlpool::KvPutFlags::kToSsd), 2u);
    EXPECT_EQ(daemon.last_commit_flags.load(), CXLPOOL_KV_COMMIT_TO_SSD);
    EXPECT_EQ(reservation.on_ssd(), 2u);
  }
  const void* data[3] = {"x", "y", "z"};
  uint64_t on_ssd = 99;
  EXPECT_EQ(store.put(ns, keys, data, 1, cxlpool::KvPutFlags::kToSsd, &on_ssd), 3u);
  EXPECT_EQ(on_ssd, 1u) << "two of the three were stored already";
  EXPECT_EQ(store.put(ns, std::vector<cxlpool::KvKey>{{7, 8}}, std::span(data, 1), 1), 1u);
  EXPECT_EQ(daemon.last_commit_flags.load(), CXLPOOL_KV_COMMIT_CHECKSUMS);
  EXPECT_THROW(store.put(ns, keys, data, 1, static_cast<cxlpool::KvPutFlags>(1u << 3)), std::system_error);
}

// KvReservation::copy keeps each chunk's CRC-32C; a commit of chunks all
// written so declares them, one with a chunk written through data() does
// not, and a daemon without the flag gets the commit without it.
TEST(ClientKvCxx, ReservationCopyDeclaresChecksums) {
  FakeKvDaemon daemon;
  cxlpool::Client client(daemon.socket_path(), "kv-cxx");
  cxlpool::KvStore store(client);
  const cxlpool::KvNamespace ns = store.open_namespace("model", "layout", "bf16", 0, 1, 16);
  std::vector<unsigned char> src(100, 'q');
  const std::vector<cxlpool::KvKey> keys{{11, 2}, {13, 4}, {15, 6}, {17, 8}, {19, 10}};
  {
    cxlpool::KvReservation reservation = store.put_begin(ns, std::span(keys).first(2), 100);
    for (size_t i = 0; i < 2; ++i) reservation.copy(i, src.data(), src.size());
    EXPECT_THROW(reservation.copy(0, src.data(), 101), std::system_error) << "longer than the slot";
    EXPECT_EQ(reservation.commit(), 2u);
    EXPECT_EQ(daemon.last_commit_flags.load(), CXLPOOL_KV_COMMIT_CHECKSUMS);
    EXPECT_EQ(daemon.checksum_mismatches.load(), 0u);
  }
  {
    cxlpool::KvReservation reservation = store.put_begin(ns, std::span(keys).subspan(2, 2), 100);
    reservation.copy(0, src.data(), src.size());
    std::memset(reservation.data(1), 'r', 100);
    EXPECT_EQ(reservation.commit(), 2u);
    EXPECT_EQ(daemon.last_commit_flags.load(), 0) << "chunk 1 was not copied: nothing declared";
  }
  daemon.knows_checksums = false;
  {
    cxlpool::KvReservation reservation = store.put_begin(ns, std::span(keys).subspan(4, 1), 100);
    reservation.copy(0, src.data(), src.size());
    EXPECT_EQ(reservation.commit(), 1u);
    EXPECT_EQ(daemon.last_commit_flags.load(), 0);
  }
}

}  // namespace
