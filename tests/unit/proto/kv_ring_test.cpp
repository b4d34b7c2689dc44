// SPDX-License-Identifier: Apache-2.0
// The KV data-path rings: layout, every opcode round trip with its lists,
// wrap-around, full rings, a two-thread stress with eventfd wake-ups, and
// both ends facing a hostile peer.
#include "cxlpool/proto/kv_ring.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

namespace cxlpool::proto {
namespace {

KvKey key(uint64_t i) { return KvKey{.lo = i * 0x9E3779B97F4A7C15ull, .hi = ~i}; }
KvLocation location(uint64_t i) {
  return KvLocation{.offset = i << 21, .length = 1u << 21, .tier = static_cast<uint16_t>(i % 3), .flags = 0};
}
std::vector<KvKey> keys(uint64_t first, size_t n) {
  std::vector<KvKey> v;
  for (size_t i = 0; i < n; ++i) v.push_back(key(first + i));
  return v;
}
std::vector<KvLocation> locations(uint64_t first, size_t n) {
  std::vector<KvLocation> v;
  for (size_t i = 0; i < n; ++i) v.push_back(location(first + i));
  return v;
}

struct Rings {
  explicit Rings(KvRingGeometry g = {}) : geometry(g) {
    auto m = KvRingMemory::create(g);
    EXPECT_TRUE(m) << m.error().message;
    memory = std::move(*m);
    auto s = ring_eventfd();
    auto c = ring_eventfd();
    EXPECT_TRUE(s && c);
    sq_efd = std::move(*s);
    cq_efd = std::move(*c);
    auto d = KvDaemonRing::attach(memory.bytes(), g, sq_efd.get(), cq_efd.get());
    EXPECT_TRUE(d) << d.error().message;
    daemon = *d;
    auto cl = KvClientRing::attach(memory.bytes(), sq_efd.get(), cq_efd.get());
    EXPECT_TRUE(cl) << cl.error().message;
    client = *cl;
  }
  KvRingHeader& header() { return *reinterpret_cast<KvRingHeader*>(memory.bytes().data()); }
  KvRingLayout layout() const { return kv_ring_layout(geometry); }
  KvRequest* sq_slot(uint64_t i) {
    return reinterpret_cast<KvRequest*>(memory.bytes().data() + layout().sq_ring_offset) + (i & (geometry.sq_entries - 1));
  }
  KvCompletion* cq_slot(uint64_t i) {
    return reinterpret_cast<KvCompletion*>(memory.bytes().data() + layout().cq_ring_offset) +
           (i & (geometry.cq_entries - 1));
  }
  KvRingGeometry geometry;
  KvRingMemory memory;
  UniqueFd sq_efd, cq_efd;
  KvDaemonRing daemon;
  KvClientRing client;
};

KvRequest request(KvOp op, uint64_t id) {
  KvRequest r;
  r.request_id = id;
  r.op = static_cast<uint8_t>(op);
  r.namespace_id = 42;
  r.param0 = op == KvOp::kRelease ? 7 : (1u << 21);
  return r;
}

KvCompletion answer(const KvRequest& r, int32_t status = 0) {
  KvCompletion c;
  c.request_id = r.request_id;
  c.op = r.op;
  c.status = status;
  c.result0 = r.count;
  c.result1 = r.request_id * 3;
  return c;
}

TEST(KvRing, LayoutIsStable) {
  EXPECT_EQ(sizeof(KvRequest), 64u);
  EXPECT_EQ(sizeof(KvCompletion), 64u);
  EXPECT_EQ(offsetof(KvRequest, op), 8u);
  EXPECT_EQ(offsetof(KvRequest, count), 12u);
  EXPECT_EQ(offsetof(KvRequest, arg_offset), 16u);
  EXPECT_EQ(offsetof(KvRequest, namespace_id), 24u);
  EXPECT_EQ(offsetof(KvRequest, param0), 32u);
  EXPECT_EQ(offsetof(KvCompletion, status), 8u);
  EXPECT_EQ(offsetof(KvCompletion, count), 16u);
  EXPECT_EQ(offsetof(KvCompletion, result0), 24u);
  EXPECT_EQ(offsetof(KvRingHeader, total_bytes), 56u);
  EXPECT_EQ(offsetof(KvRingHeader, sq_producer), 64u);
  EXPECT_EQ(offsetof(KvRingHeader, sq_consumer), 128u);
  EXPECT_EQ(offsetof(KvRingHeader, sq_slab_consumer), 136u);
  EXPECT_EQ(offsetof(KvRingHeader, sq_need_wakeup), 192u);
  EXPECT_EQ(offsetof(KvRingHeader, cq_producer), 256u);
  EXPECT_EQ(offsetof(KvRingHeader, cq_consumer), 320u);
  EXPECT_EQ(offsetof(KvRingHeader, cq_slab_consumer), 328u);
  EXPECT_EQ(offsetof(KvRingHeader, cq_need_wakeup), 384u);
  EXPECT_EQ(offsetof(KvRingHeader, daemon_cpu), 448u);
  const KvRingLayout l = kv_ring_layout({256, 128, 1u << 20, 1u << 19});
  EXPECT_EQ(l.sq_ring_offset, 512u);
  EXPECT_EQ(l.cq_ring_offset, 512u + 256 * 64);
  EXPECT_EQ(l.sq_slab_offset, 512u + 384 * 64);
  EXPECT_EQ(l.cq_slab_offset, 512u + 384 * 64 + (1u << 20));
  EXPECT_EQ(l.total_bytes, 512u + 384 * 64 + (1u << 20) + (1u << 19));
}

TEST(KvRing, CreateRejectsBadGeometry) {
  EXPECT_EQ(KvRingMemory::create({3, 4, 4096, 4096}).error().code, EINVAL);
  EXPECT_EQ(KvRingMemory::create({1, 4, 4096, 4096}).error().code, EINVAL);
  EXPECT_EQ(KvRingMemory::create({4, 1u << 17, 4096, 4096}).error().code, EINVAL);
  EXPECT_EQ(KvRingMemory::create({4, 4, 100, 4096}).error().code, EINVAL);
  EXPECT_EQ(KvRingMemory::create({4, 4, 4096, (1u << 26) + 64}).error().code, EINVAL);
}

TEST(KvRing, EveryOpcodeRoundTrips) {
  Rings r;
  const KvOp ops[] = {KvOp::kLookup, KvOp::kPutBegin, KvOp::kPutCommit, KvOp::kGet,
                      KvOp::kRelease, KvOp::kPrefetch, KvOp::kDelete};
  uint64_t id = 100;
  std::vector<KvRequest> sent;
  for (KvOp op : ops) {
    KvRequest q = request(op, id++);
    if (op == KvOp::kLookup) q.flags = kKvLookupCostCutoff;
    if (op == KvOp::kPutCommit) q.flags = kKvPutCommitToSsd;
    const size_t n = op == KvOp::kRelease ? 0 : 1 + (id % 9);
    ASSERT_TRUE(r.client.submit(q, keys(id * 100, n)));
    q.count = static_cast<uint32_t>(n);
    sent.push_back(q);
  }
  r.client.flush();
  KvRequestBatch batch;
  ASSERT_EQ(r.daemon.take(batch), std::size(ops));
  for (size_t i = 0; i < sent.size(); ++i) {
    const KvRequest& got = batch.requests[i];
    EXPECT_EQ(got.request_id, sent[i].request_id);
    EXPECT_EQ(got.op, sent[i].op);
    EXPECT_EQ(got.flags, sent[i].flags);
    EXPECT_EQ(got.namespace_id, 42u);
    EXPECT_EQ(got.param0, sent[i].param0);
    EXPECT_EQ(got.count, sent[i].count);
    EXPECT_EQ(batch.errors[i], 0);
    auto ks = batch.keys_of(i);
    ASSERT_EQ(ks.size(), sent[i].count);
    for (size_t k = 0; k < ks.size(); ++k) EXPECT_EQ(ks[k], key(sent[i].request_id * 100 + 100 + k));
    ASSERT_TRUE(r.daemon.complete(answer(got, i == 3 ? -ENOENT : 0), locations(got.request_id, got.count)));
  }
  r.daemon.flush();
  KvCompletionBatch done;
  ASSERT_EQ(r.client.reap(done), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    const KvCompletion& c = done.completions[i];
    EXPECT_EQ(c.request_id, sent[i].request_id);
    EXPECT_EQ(c.op, sent[i].op);
    EXPECT_EQ(c.status, i == 3 ? -ENOENT : 0);
    EXPECT_EQ(c.result0, sent[i].count);
    EXPECT_EQ(c.result1, sent[i].request_id * 3);
    auto ls = done.locations_of(i);
    ASSERT_EQ(ls.size(), sent[i].count);
    for (size_t k = 0; k < ls.size(); ++k) EXPECT_EQ(ls[k], location(sent[i].request_id + k));
  }
  EXPECT_EQ(r.client.in_flight(), 0u);
  EXPECT_EQ(r.daemon.outstanding(), 0u);
  EXPECT_FALSE(r.client.broken());
  EXPECT_FALSE(r.daemon.broken());
}

TEST(KvRing, ClientRefusesMalformedRequests) {
  Rings r;
  EXPECT_EQ(r.client.submit(request(KvOp::kRelease, 1), keys(0, 1)).error().code, EINVAL);
  EXPECT_EQ(r.client.submit(request(KvOp::kGet, 1), {}).error().code, EINVAL);
  KvRequest bad = request(KvOp::kGet, 1);
  bad.op = 9;
  EXPECT_EQ(r.client.submit(bad, keys(0, 1)).error().code, EINVAL);
  bad = request(KvOp::kGet, 1);
  bad.flags = kKvLookupCostCutoff;  // only for lookup
  EXPECT_EQ(r.client.submit(bad, keys(0, 1)).error().code, EINVAL);
  bad.flags = kKvPutCommitToSsd;  // only for put_commit
  EXPECT_EQ(r.client.submit(bad, keys(0, 1)).error().code, EINVAL);
  bad = request(KvOp::kPutCommit, 1);
  bad.flags = kKvLookupCostCutoff;
  EXPECT_EQ(r.client.submit(bad, keys(0, 1)).error().code, EINVAL);
  EXPECT_EQ(r.client.submit(request(KvOp::kGet, 1), keys(0, r.geometry.sq_slab_bytes / 16 + 1)).error().code,
            EINVAL);
}

// A put_commit's declared checksums: param1 keys, then (n + 3) / 4 records
// of four CRCs each; the ring carries them as records, the flag and the
// count say where the keys end.
TEST(KvRing, DeclaredChecksumsFollowTheKeys) {
  KvRequest r = request(KvOp::kPutCommit, 1);
  r.flags = kKvPutCommitChecksums;
  for (uint32_t n : {1u, 3u, 4u, 5u, 9u}) {
    r.param1 = n;
    r.count = n + kv_checksum_records(n);
    EXPECT_TRUE(kv_request_well_formed(r)) << n;
    r.count = n + kv_checksum_records(n) - 1;
    EXPECT_FALSE(kv_request_well_formed(r)) << "a record short, n = " << n;
    r.count = n + kv_checksum_records(n) + 1;
    EXPECT_FALSE(kv_request_well_formed(r)) << "a record too many, n = " << n;
  }
  r.param1 = 0;
  r.count = 0;
  EXPECT_FALSE(kv_request_well_formed(r)) << "no keys";
  r.param1 = (uint64_t{1} << 32) + 1;  // must not wrap to 1 key
  r.count = 2;
  EXPECT_FALSE(kv_request_well_formed(r));
  KvRequest get = request(KvOp::kGet, 1);
  get.flags = kKvPutCommitChecksums;
  EXPECT_FALSE(kv_request_well_formed(get)) << "only on put_commit";

  const std::vector<uint32_t> crcs{0x11111111, 0x22222222, 0x33333333, 0x44444444, 0x55555555};
  std::vector<KvKey> records;
  kv_append_checksums(crcs, records);
  ASSERT_EQ(records.size(), 2u);
  for (uint32_t i = 0; i < crcs.size(); ++i) EXPECT_EQ(kv_checksum_at(records, i), crcs[i]);
  for (uint32_t i = 5; i < 8; ++i) EXPECT_EQ(kv_checksum_at(records, i), 0u) << "unused lanes are zero";

  // Through the rings: the daemon takes the keys and checksums as one list.
  Rings rings;
  std::vector<KvKey> list = keys(0, 5);
  kv_append_checksums(crcs, list);
  KvRequest commit = request(KvOp::kPutCommit, 7);
  commit.flags = kKvPutCommitChecksums;
  commit.param1 = 5;
  ASSERT_TRUE(rings.client.submit(commit, list));
  rings.client.flush();
  KvRequestBatch batch;
  ASSERT_EQ(rings.daemon.take(batch, 8), 1u);
  EXPECT_EQ(batch.errors[0], 0);
  ASSERT_EQ(batch.keys_of(0).size(), 7u);
  EXPECT_EQ(kv_checksum_at(batch.keys_of(0).subspan(5), 4), crcs[4]);
  EXPECT_EQ(kv_request_keys(batch.requests[0], batch.keys_of(0)).size(), 5u) << "the keys, not the checksums";
  KvRequest plain = request(KvOp::kPutCommit, 8);
  EXPECT_EQ(kv_request_keys(plain, batch.keys_of(0)).size(), 7u);
}

TEST(KvRing, WrapsAroundRingsAndSlabs) {
  // Small rings and slabs: lists of 1..7 keys cross both slab ends many times.
  Rings r({4, 4, 256, 256});
  uint64_t id = 0;
  for (int round = 0; round < 500; ++round) {
    const size_t n = 1 + round % 7;
    ASSERT_TRUE(r.client.submit(request(KvOp::kGet, id), keys(id, n))) << round;
    r.client.flush();
    KvRequestBatch batch;
    ASSERT_EQ(r.daemon.take(batch), 1u) << round;
    ASSERT_EQ(batch.keys_of(0).size(), n);
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(batch.keys_of(0)[k], key(id + k));
    ASSERT_TRUE(r.daemon.complete(answer(batch.requests[0]), locations(id, n)));
    r.daemon.flush();
    KvCompletionBatch done;
    ASSERT_EQ(r.client.reap(done), 1u);
    ASSERT_EQ(done.completions[0].request_id, id);
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(done.locations_of(0)[k], location(id + k));
    ++id;
  }
  EXPECT_EQ(RingIndex(r.header().sq_producer).load(), 500u);
  EXPECT_GT(RingIndex(r.header().sq_slab_consumer).load(), 256u * 10);
}

TEST(KvRing, FullRingsRefuseWithoutBlocking) {
  Rings r({4, 8, 4096, 4096});
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(r.client.submit(request(KvOp::kLookup, i), keys(i, 2)));
  EXPECT_EQ(r.client.submit(request(KvOp::kLookup, 9), keys(0, 2)).error().code, EAGAIN);
  r.client.flush();
  KvRequestBatch batch;
  ASSERT_EQ(r.daemon.take(batch, 2), 2u);
  // Two slots freed in the SQ.
  ASSERT_TRUE(r.client.submit(request(KvOp::kLookup, 4), keys(4, 2)));
  ASSERT_TRUE(r.client.submit(request(KvOp::kLookup, 5), keys(5, 2)));
  EXPECT_EQ(r.client.submit(request(KvOp::kLookup, 6), keys(6, 2)).error().code, EAGAIN);

  // Slab full: 4096 bytes hold 256 keys.
  Rings s({16, 16, 4096, 4096});
  ASSERT_TRUE(s.client.submit(request(KvOp::kLookup, 0), keys(0, 200)));
  EXPECT_EQ(s.client.submit(request(KvOp::kLookup, 1), keys(0, 100)).error().code, EAGAIN);
  ASSERT_TRUE(s.client.submit(request(KvOp::kLookup, 1), keys(0, 56)));

  // No more requests in flight than the CQ can answer.
  Rings t({16, 2, 4096, 4096});
  ASSERT_TRUE(t.client.submit(request(KvOp::kGet, 0), keys(0, 1)));
  ASSERT_TRUE(t.client.submit(request(KvOp::kGet, 1), keys(0, 1)));
  EXPECT_EQ(t.client.submit(request(KvOp::kGet, 2), keys(0, 1)).error().code, EAGAIN);

  // CQ slab full: the daemon gets EAGAIN, then succeeds once the client reaps.
  Rings u({16, 16, 4096, 256});
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(u.client.submit(request(KvOp::kGet, i), keys(i, 1)));
  u.client.flush();
  KvRequestBatch b;
  ASSERT_EQ(u.daemon.take(b), 3u);
  ASSERT_TRUE(u.daemon.complete(answer(b.requests[0]), locations(0, 10)));
  EXPECT_EQ(u.daemon.complete(answer(b.requests[1]), locations(0, 10)).error().code, EAGAIN);
  u.daemon.flush();
  KvCompletionBatch done;
  ASSERT_EQ(u.client.reap(done), 1u);
  ASSERT_TRUE(u.daemon.complete(answer(b.requests[1]), locations(0, 10)));
  ASSERT_TRUE(u.daemon.complete(answer(b.requests[2]), {}));
  EXPECT_EQ(u.daemon.complete(answer(b.requests[2]), {}).error().code, EINVAL);  // nothing left to answer
}

// The daemon stops taking requests when their completions could not fit.
TEST(KvRing, DaemonTakesNoMoreThanTheCqCanAnswer) {
  Rings r({16, 4, 4096, 4096});
  // A client that ignores its in-flight limit: write 8 entries by hand.
  for (uint64_t i = 0; i < 8; ++i) {
    KvRequest q = request(KvOp::kRelease, i);
    std::memcpy(r.sq_slot(i), &q, sizeof q);
  }
  RingIndex(r.header().sq_producer).store(8);
  KvRequestBatch batch;
  EXPECT_EQ(r.daemon.take(batch), 4u);
  EXPECT_EQ(r.daemon.take(batch), 0u);
  ASSERT_TRUE(r.daemon.complete(answer(batch.requests[0]), {}));
  EXPECT_EQ(r.daemon.take(batch), 0u);  // answered but not reaped: still occupies the CQ
  EXPECT_FALSE(r.daemon.broken());
}

// Two threads, ~200k requests each way, both sides sleeping on eventfds when
// idle. A lost wake-up would stall a side until the test's timeout.
TEST(KvRing, StressWithWakeups) {
  Rings r({64, 64, 16384, 16384});
  constexpr uint64_t kRequests = 200000;
  std::atomic<bool> daemon_failed{false};
  std::atomic<uint64_t> daemon_sleeps{0};
  std::atomic<uint64_t> daemon_timeouts{0};
  std::atomic<bool> stop{false};
  std::thread daemon([&] {
    KvRequestBatch batch;
    std::vector<KvRequest> pending;
    std::vector<KvKey> pending_keys;
    uint64_t answered = 0;
    size_t next = 0;
    while (answered < kRequests && !stop.load()) {
      if (next == pending.size()) {
        pending.clear();
        next = 0;
        batch.clear();
        if (r.daemon.take(batch) == 0) {
          if (r.daemon.broken()) break;
          auto w = r.daemon.wait(5000);
          if (!w) break;
          if (!*w) daemon_timeouts.fetch_add(1);  // 5 s without a kick: a lost wake-up
          daemon_sleeps.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        for (size_t i = 0; i < batch.requests.size(); ++i) {
          // Check every key the client wrote: it encodes the request id.
          const KvRequest& q = batch.requests[i];
          auto ks = batch.keys_of(i);
          for (size_t k = 0; k < ks.size(); ++k) {
            if (ks[k] != key(q.request_id + k)) daemon_failed = true;
          }
          pending.push_back(q);
        }
      }
      const KvRequest& q = pending[next];
      auto ok = r.daemon.complete(answer(q), locations(q.request_id, q.count));
      if (ok) {
        ++next;
        ++answered;
        if (next == pending.size()) r.daemon.flush();
        continue;
      }
      if (ok.error().code != EAGAIN) break;
      r.daemon.flush();
      auto w = r.daemon.wait(5000);
      if (!w) break;
      if (!*w) daemon_timeouts.fetch_add(1);
    }
    r.daemon.flush();
    if (answered != kRequests) daemon_failed = true;
  });

  uint64_t submitted = 0;
  uint64_t reaped = 0;
  uint64_t client_sleeps = 0;
  bool client_failed = false;
  KvCompletionBatch done;
  const auto start = std::chrono::steady_clock::now();
  while (reaped < kRequests && !client_failed) {
    while (submitted < kRequests) {
      const size_t n = (submitted % 5 == 0) ? 0 : 1 + submitted % 13;
      KvRequest q = request(n == 0 ? KvOp::kRelease : KvOp::kGet, submitted);
      if (!r.client.submit(q, keys(submitted, n))) break;
      ++submitted;
      if (submitted % 8 == 0) r.client.flush();
    }
    r.client.flush();
    done.clear();
    const size_t got = r.client.reap(done);
    for (size_t i = 0; i < got; ++i) {
      const KvCompletion& c = done.completions[i];
      if (c.request_id != reaped + i || c.status != 0) client_failed = true;
      auto ls = done.locations_of(i);
      for (size_t k = 0; k < ls.size(); ++k) {
        if (ls[k] != location(c.request_id + k)) client_failed = true;
      }
    }
    reaped += got;
    if (got == 0 && reaped < kRequests) {
      auto w = r.client.wait(5000);
      if (!w) client_failed = true;
      // False: 5 s without a kick while a request was in flight, a lost wake-up.
      if (!*w) client_failed = true;
      ++client_sleeps;
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(40)) client_failed = true;
    }
  }
  stop = true;
  ring_kick(r.sq_efd.get());
  daemon.join();
  EXPECT_FALSE(client_failed);
  EXPECT_FALSE(daemon_failed);
  EXPECT_EQ(daemon_timeouts.load(), 0u);
  EXPECT_EQ(reaped, kRequests);
  EXPECT_FALSE(r.client.broken());
  EXPECT_FALSE(r.daemon.broken());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // Both sides actually slept (otherwise the wake-up path went untested).
  EXPECT_GT(client_sleeps + daemon_sleeps.load(), 0u);
}

TEST(KvRing, WakeupFlagAvoidsSyscallsWhenAwake) {
  Rings r;
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 0), keys(0, 1)));
  EXPECT_FALSE(r.client.flush());  // daemon not asleep: no kick
  KvRequestBatch batch;
  ASSERT_EQ(r.daemon.take(batch), 1u);
  EXPECT_TRUE(r.daemon.arm_wakeup());  // nothing to take: may sleep
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 1), keys(1, 1)));
  EXPECT_TRUE(r.client.flush());  // asleep: kicked
  auto w = r.daemon.wait(0);
  ASSERT_TRUE(w);
  EXPECT_TRUE(*w);
  // Work published before arming: arm refuses to sleep.
  EXPECT_FALSE(r.daemon.arm_wakeup());
  EXPECT_EQ(RingWord(r.header().sq_need_wakeup).load(), 0u);
  // Client side: a completion already there means no sleep.
  ASSERT_TRUE(r.daemon.complete(answer(batch.requests[0]), {}));
  EXPECT_TRUE(r.client.arm_wakeup());
  EXPECT_TRUE(r.daemon.flush());
  EXPECT_FALSE(r.client.arm_wakeup());
}

TEST(KvRing, DaemonSaysWhichCpuItPublishedFrom) {
  // Pinned to one CPU, so that both ends of the check run where the daemon
  // end published from.
  cpu_set_t before;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  const int cpu = ::sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  Rings r;
  EXPECT_EQ(RingWord(r.header().daemon_cpu).load(), 0u);
  EXPECT_FALSE(r.client.daemon_on_this_cpu());  // nothing said yet
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 0), keys(0, 1)));
  r.client.flush();
  KvRequestBatch batch;
  ASSERT_EQ(r.daemon.take(batch), 1u);
  r.daemon.flush();  // nothing to publish: says nothing
  EXPECT_EQ(RingWord(r.header().daemon_cpu).load(), 0u);
  ASSERT_TRUE(r.daemon.complete(answer(batch.requests[0]), {}));
  r.daemon.flush();
  EXPECT_EQ(RingWord(r.header().daemon_cpu).load(), static_cast<uint32_t>(cpu) + 1);
  EXPECT_TRUE(r.client.daemon_on_this_cpu());
  // Another CPU's number (or garbage a peer wrote): not ours.
  RingWord(r.header().daemon_cpu).store(static_cast<uint32_t>(cpu) + 2);
  EXPECT_FALSE(r.client.daemon_on_this_cpu());
  ASSERT_EQ(::sched_setaffinity(0, sizeof before, &before), 0);
}

// ----------------------------------------------------------- hostile client

TEST(KvRing, DaemonQuarantinesGarbageProducerIndex) {
  Rings r;
  RingIndex(r.header().sq_producer).store(uint64_t{1} << 50);
  KvRequestBatch batch;
  EXPECT_EQ(r.daemon.take(batch), 0u);
  EXPECT_TRUE(r.daemon.broken());
  EXPECT_EQ(r.daemon.complete(KvCompletion{}, {}).error().code, EPIPE);
  EXPECT_FALSE(r.daemon.arm_wakeup());
}

TEST(KvRing, DaemonQuarantinesOverwrittenHeader) {
  Rings r;
  r.header().sq_slab_bytes = 1u << 26;
  KvRequestBatch batch;
  EXPECT_EQ(r.daemon.take(batch), 0u);
  EXPECT_TRUE(r.daemon.broken());
}

TEST(KvRing, DaemonQuarantinesClientClaimingUnproducedCompletions) {
  Rings r;
  RingIndex(r.header().cq_consumer).store(5);
  KvRequestBatch batch;
  EXPECT_EQ(r.daemon.take(batch), 0u);
  EXPECT_TRUE(r.daemon.broken());
}

// Each hostile entry is written after one good one; the good one is taken,
// the ring breaks at the bad one, nothing past the slab is read (ASan).
void expect_quarantined(const std::function<void(KvRequest&)>& spoil) {
  Rings r({16, 16, 4096, 4096});
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 0), keys(0, 4)));
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 1), keys(4, 4)));
  spoil(*r.sq_slot(1));
  r.client.flush();
  KvRequestBatch batch;
  EXPECT_EQ(r.daemon.take(batch), 1u);
  EXPECT_TRUE(r.daemon.broken());
  EXPECT_EQ(batch.keys.size(), 4u);
  batch.clear();
  EXPECT_EQ(r.daemon.take(batch), 0u);
}

TEST(KvRing, DaemonQuarantinesOutOfSlabArguments) {
  expect_quarantined([](KvRequest& q) { q.arg_offset = 4096 - 16; });   // crosses the slab end
  expect_quarantined([](KvRequest& q) { q.arg_offset = 1u << 30; });     // far outside
  expect_quarantined([](KvRequest& q) { q.arg_offset = 8; });            // not where the discipline puts it
}

TEST(KvRing, DaemonQuarantinesOverlappingArguments) {
  expect_quarantined([](KvRequest& q) { q.arg_offset = 0; });  // same list as the first request
  expect_quarantined([](KvRequest& q) { q.arg_offset = 32; }); // inside it
}

TEST(KvRing, DaemonQuarantinesAbsurdCounts) {
  expect_quarantined([](KvRequest& q) { q.count = UINT32_MAX; });
  expect_quarantined([](KvRequest& q) { q.count = 4096 / 16 + 1; });
  // Many entries whose lists each fit, but together exceed the slab: overlap.
  Rings r({16, 16, 4096, 4096});
  for (uint64_t i = 0; i < 8; ++i) {
    KvRequest q = request(KvOp::kGet, i);
    q.count = 128;  // 2048 bytes each: the third one wraps onto the first
    q.arg_offset = (i % 2) * 2048;
    std::memcpy(r.sq_slot(i), &q, sizeof q);
  }
  RingIndex(r.header().sq_producer).store(8);
  KvRequestBatch batch;
  EXPECT_EQ(r.daemon.take(batch), 2u);
  EXPECT_TRUE(r.daemon.broken());
}

TEST(KvRing, DaemonAnswersMalformedEntriesWithEinval) {
  Rings r;
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 0), keys(0, 2)));
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 1), keys(2, 2)));
  ASSERT_TRUE(r.client.submit(request(KvOp::kGet, 2), keys(4, 2)));
  r.sq_slot(0)->op = 0;
  r.sq_slot(1)->reserved2[1] = 1;
  r.client.flush();
  KvRequestBatch batch;
  ASSERT_EQ(r.daemon.take(batch), 3u);
  EXPECT_EQ(batch.errors[0], -EINVAL);
  EXPECT_EQ(batch.errors[1], -EINVAL);
  EXPECT_EQ(batch.errors[2], 0);
  EXPECT_EQ(batch.keys_of(2)[1], key(5));
  EXPECT_FALSE(r.daemon.broken());

  // The unknown op is answered as op 0 with an error; a success with op 0
  // is refused. The client accepts the error answer.
  KvCompletion unknown;
  unknown.request_id = batch.requests[0].request_id;
  unknown.op = 0;
  EXPECT_FALSE(r.daemon.complete(unknown, {}));
  unknown.status = -EINVAL;
  ASSERT_TRUE(r.daemon.complete(unknown, {}));
  r.daemon.flush();
  KvCompletionBatch done;
  EXPECT_EQ(r.client.reap(done), 1u);
  EXPECT_EQ(done.completions[0].op, 0u);
  EXPECT_EQ(done.completions[0].status, -EINVAL);
  EXPECT_FALSE(r.client.broken());
}

TEST(KvRing, DaemonSurvivesRandomGarbage) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    Rings r({8, 8, 256, 256});
    auto bytes = r.memory.bytes();
    // Scribble over the SQ entries, the slab and the client's words.
    for (size_t i = r.layout().sq_ring_offset; i < r.layout().cq_ring_offset; ++i) {
      bytes[i] = static_cast<std::byte>(rng());
    }
    RingIndex(r.header().sq_producer).store(rng() % 12);
    KvRequestBatch batch;
    for (int k = 0; k < 3; ++k) r.daemon.take(batch);
    EXPECT_LE(batch.requests.size(), 8u);
    EXPECT_LE(batch.keys.size(), 8u * 256 / 16);
    for (size_t i = 0; i < batch.requests.size(); ++i) EXPECT_LE(batch.requests[i].count, 256u / 16);
  }
}

// ----------------------------------------------------------- hostile daemon

struct ClientCase {
  Rings rings{KvRingGeometry{16, 16, 4096, 4096}};
  ClientCase() {
    EXPECT_TRUE(rings.client.submit(request(KvOp::kGet, 0), keys(0, 2)));
    EXPECT_TRUE(rings.client.submit(request(KvOp::kGet, 1), keys(2, 2)));
    rings.client.flush();
    KvRequestBatch b;
    EXPECT_EQ(rings.daemon.take(b), 2u);
    EXPECT_TRUE(rings.daemon.complete(answer(b.requests[0]), locations(0, 2)));
    EXPECT_TRUE(rings.daemon.complete(answer(b.requests[1]), locations(2, 2)));
    rings.daemon.flush();
  }
};

TEST(KvRing, ClientBoundsTheCompletionRing) {
  {
    ClientCase c;
    RingIndex(c.rings.header().cq_producer).store(1000);
    KvCompletionBatch done;
    EXPECT_EQ(c.rings.client.reap(done), 0u);
    EXPECT_TRUE(c.rings.client.broken());
    EXPECT_EQ(c.rings.client.submit(request(KvOp::kGet, 5), keys(0, 1)).error().code, EPIPE);
  }
  {
    ClientCase c;
    RingIndex(c.rings.header().cq_producer).store(3);  // a completion for no request
    *c.rings.cq_slot(2) = *c.rings.cq_slot(1);
    c.rings.cq_slot(2)->arg_offset = 64;
    KvCompletionBatch done;
    EXPECT_EQ(c.rings.client.reap(done), 2u);
    EXPECT_TRUE(c.rings.client.broken());
  }
  auto spoiled = [](const std::function<void(KvCompletion&)>& spoil) {
    ClientCase c;
    spoil(*c.rings.cq_slot(1));
    KvCompletionBatch done;
    EXPECT_EQ(c.rings.client.reap(done), 1u);
    EXPECT_TRUE(c.rings.client.broken());
    EXPECT_EQ(done.locations.size(), 2u);
  };
  spoiled([](KvCompletion& e) { e.arg_offset = 4096 - 16; });
  spoiled([](KvCompletion& e) { e.arg_offset = 0; });  // overlaps the first list
  spoiled([](KvCompletion& e) { e.count = UINT32_MAX; });
  spoiled([](KvCompletion& e) { e.status = 5; });
  spoiled([](KvCompletion& e) { e.op = 200; });
}

TEST(KvRing, ClientRejectsBadHeaders) {
  Rings r;
  auto bytes = r.memory.bytes();
  r.header().cq_slab_bytes = 1u << 26;  // would reach past the mapping
  EXPECT_EQ(KvClientRing::attach(bytes, -1, -1).error().code, EPROTO);
  Rings s;
  s.header().sq_ring_offset = 0;
  EXPECT_EQ(KvClientRing::attach(s.memory.bytes(), -1, -1).error().code, EPROTO);
  Rings t;
  t.header().magic = 0;
  EXPECT_EQ(KvClientRing::attach(t.memory.bytes(), -1, -1).error().code, EPROTO);
  EXPECT_EQ(KvClientRing::attach(bytes.first(100), -1, -1).error().code, EPROTO);
}

TEST(KvRing, MapsAReceivedDescriptor) {
  Rings r;
  auto m = KvRingMemory::map(r.memory.fd(), kv_ring_layout(r.geometry).total_bytes);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(reinterpret_cast<KvRingHeader*>(m->bytes().data())->magic, kKvRingMagic);
  EXPECT_EQ(KvRingMemory::map(r.memory.fd(), 1ull << 40).error().code, EPROTO);
}

}  // namespace
}  // namespace cxlpool::proto
