// SPDX-License-Identifier: Apache-2.0
// Client access reports end to end: cxlpool_access_report in one process,
// the daemon's client-report source counting them, and a client that fills
// its ring with garbage without hurting anyone else.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/cxlpool.hpp"
#include "cxlpool/proto/access_ring.hpp"
#include "cxlpool/proto/messages.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "support/raw_socket.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

class ClientReports : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(daemon_.start()); }
  uint32_t emu_tier() {
    auto admin = connect_admin(daemon_.socket());
    return tier_named(*admin, kEmuTier).id;
  }
  uint64_t counter(const std::string& name) {
    auto admin = connect_admin(daemon_.socket());
    return stat(*admin, name);
  }
  bool counter_reaches(const std::string& name, uint64_t value) {
    return wait_until([&] { return counter(name) >= value; }, 5s, 50ms);
  }
  DaemonProcess daemon_{TestConfig{}.render()};
};

TEST_F(ClientReports, ReachTheDaemon) {
  Client client(daemon_.socket(), "reporter");
  Region region = client.alloc(emu_tier(), 4 * kMiB);
  // Before any report: no ring.
  EXPECT_EQ(counter("tiering.client.rings"), 0u);

  // 3000 reports: 1000 distinct objects of 256 bytes, each reported three
  // times in a row (merged into one entry by the library), some writes.
  for (uint64_t i = 0; i < 1000; ++i) {
    for (int k = 0; k < 3; ++k) {
      ASSERT_EQ(cxlpool_access_report(region.get(), i * 4096 + 512, 256, (i % 2) ? CXLPOOL_ACCESS_WRITE : 0), 0);
    }
  }
  EXPECT_EQ(cxlpool_access_flush(client.get()), 0);
  EXPECT_EQ(counter("tiering.client.rings"), 1u);
  EXPECT_TRUE(counter_reaches("tiering.client.accesses", 3000)) << daemon_.log();
  EXPECT_EQ(counter("tiering.client.accesses"), 3000u);
  EXPECT_EQ(counter("tiering.client.dropped"), 0u);

  // Bad arguments never reach the ring.
  EXPECT_EQ(cxlpool_access_report(region.get(), 4 * kMiB - 10, 11, 0), -EINVAL);
  EXPECT_EQ(cxlpool_access_report(region.get(), 0, 0, 0), -EINVAL);
  EXPECT_EQ(cxlpool_access_report(region.get(), 0, 64, 0x100), -EINVAL);
  EXPECT_EQ(cxlpool_access_report(nullptr, 0, 64, 0), -EINVAL);
  EXPECT_EQ(cxlpool_access_ring_open(client.get(), 0), -EALREADY);

  // The C++ layer, a span of several pages.
  EXPECT_EQ(region.report_access(0, 3 * 4096, true), 0);
  EXPECT_EQ(client.flush_access_reports(), 0);
  EXPECT_TRUE(counter_reaches("tiering.client.accesses", 3001));

  // The ring goes with the connection.
  region.free();
  { Client gone(std::move(client)); }
  EXPECT_TRUE(wait_until([&] { return counter("tiering.client.rings") == 0; }, 5s, 50ms));
  EXPECT_EQ(counter("tiering.client.broken_rings"), 0u);
}

TEST_F(ClientReports, ExplicitOpenAndSize) {
  Client client(daemon_.socket(), "sized");
  EXPECT_EQ(cxlpool_access_ring_open(client.get(), 3), -EINVAL);
  ASSERT_EQ(cxlpool_access_ring_open(client.get(), 64), 0);
  Region region = client.alloc(emu_tier(), kMiB);
  // 64 slots: of 1000 distinct reports published in batches of 64 with no
  // drain in between, most are dropped, reported, and counted by the daemon.
  uint64_t dropped = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const int rc = cxlpool_access_report(region.get(), i * 64, 64, 0);
    ASSERT_GE(rc, 0);
    dropped += static_cast<uint64_t>(rc);
  }
  const int rc = cxlpool_access_flush(client.get());
  ASSERT_GE(rc, 0);
  dropped += static_cast<uint64_t>(rc);
  EXPECT_GT(dropped, 0u);
  EXPECT_TRUE(counter_reaches("tiering.client.accesses", 1000 - dropped)) << daemon_.log();
  EXPECT_TRUE(counter_reaches("tiering.client.dropped", dropped));
  EXPECT_EQ(counter("tiering.client.accesses") + counter("tiering.client.dropped"), 1000u);
}

// Several threads report through one client at once: the library's lock
// keeps the ring single-producer, and every report arrives once.
TEST_F(ClientReports, ThreadsShareOneRing) {
  constexpr uint64_t kThreads = 4;
  constexpr uint64_t kPerThread = 5000;
  Client client(daemon_.socket(), "threads");
  ASSERT_EQ(cxlpool_access_ring_open(client.get(), 65536), 0);
  Region region = client.alloc(emu_tier(), 4 * kMiB);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        // Distinct objects everywhere, so no two reports merge.
        const uint64_t object = t * kPerThread + i;
        if (cxlpool_access_report(region.get(), object * 128, 128, (i & 1) ? CXLPOOL_ACCESS_WRITE : 0) != 0) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(cxlpool_access_flush(client.get()), 0);
  EXPECT_TRUE(counter_reaches("tiering.client.accesses", kThreads * kPerThread)) << daemon_.log();
  EXPECT_EQ(counter("tiering.client.accesses"), kThreads * kPerThread);
  EXPECT_EQ(counter("tiering.client.dropped"), 0u);
}

// A raw connection that opens its ring, writes entries for a region it does
// not hold, then scribbles over the whole ring. The daemon rejects, gives up
// on that ring and keeps serving a well-behaved client.
TEST_F(ClientReports, GarbageRingHurtsNobodyElse) {
  Client good(daemon_.socket(), "good");
  Region region = good.alloc(emu_tier(), kMiB);

  UniqueFd evil = raw_connect(daemon_.socket());
  ASSERT_TRUE(evil);
  ASSERT_TRUE(send_encoded(evil.get(), 1, proto::Hello{.client_name = "evil"}));
  ASSERT_TRUE(recv_reply(evil.get(), 5s));
  ASSERT_TRUE(send_encoded(evil.get(), 2, proto::AccessRingOpen{.entries = 256}));
  auto reply = recv_reply(evil.get(), 5s);
  ASSERT_TRUE(reply) << reply.error().message;
  auto* ring = std::get_if<proto::AccessRingReply>(&reply->envelope.message);
  ASSERT_NE(ring, nullptr);
  ASSERT_EQ(reply->fds.size(), 1u);
  EXPECT_EQ(ring->entries, 256u);
  EXPECT_EQ(ring->entry_size, sizeof(proto::AccessRingEntry));
  EXPECT_EQ(ring->ring_bytes, proto::access_ring_bytes(256));
  // The ring cannot be resized under the daemon.
  EXPECT_NE(::ftruncate(reply->fds[0].get(), 0), 0);
  EXPECT_NE(::ftruncate(reply->fds[0].get(), 1 << 30), 0);
  // One ring per connection.
  ASSERT_TRUE(send_encoded(evil.get(), 3, proto::AccessRingOpen{}));
  auto again = recv_reply(evil.get(), 5s);
  ASSERT_TRUE(again);
  auto* busy = std::get_if<proto::ErrorReply>(&again->envelope.message);
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(busy->code, EBUSY);

  auto memory = proto::AccessRingMemory::map(reply->fds[0].get(), ring->ring_bytes);
  ASSERT_TRUE(memory);
  auto producer = proto::AccessRingProducer::attach(memory->bytes());
  ASSERT_TRUE(producer);
  // The good client's region, which this connection does not hold.
  std::vector<proto::AccessRingEntry> foreign(10, {.region_id = region.id(), .offset = 0, .length = 64, .count = 1});
  ASSERT_EQ(producer->try_push(foreign), 10u);
  EXPECT_TRUE(counter_reaches("tiering.client.rejected", 10)) << daemon_.log();
  EXPECT_EQ(counter("tiering.client.accesses"), 0u);

  // Now garbage everywhere, including the indexes.
  std::mt19937_64 rng(42);
  auto bytes = memory->bytes();
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, 8);
  }
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(region.report_access(i * 64, 64), 0);
  good.flush_access_reports();
  EXPECT_TRUE(counter_reaches("tiering.client.broken_rings", 1)) << daemon_.log();
  EXPECT_TRUE(counter_reaches("tiering.client.accesses", 100)) << daemon_.log();
  EXPECT_EQ(counter("tiering.client.accesses"), 100u);
  EXPECT_TRUE(daemon_.running());
  // Still serving.
  Region more = good.alloc(emu_tier(), kMiB);
  EXPECT_EQ(more.report_access(0, 64), 0);
  EXPECT_EQ(counter("tiering.client.rings"), 2u);
  evil.reset();
  EXPECT_TRUE(wait_until([&] { return counter("tiering.client.rings") == 1; }, 5s, 50ms));
  EXPECT_TRUE(daemon_.running());
}

}  // namespace
}  // namespace cxlpool::integration
