// SPDX-License-Identifier: Apache-2.0
// The access-report ring: ordering, wrap-around, drops when full, a
// concurrent producer/consumer, and a consumer facing a hostile mapping.
#include "cxlpool/proto/access_ring.hpp"

#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace cxlpool::proto {
namespace {

AccessRingEntry entry(uint64_t seq) {
  return AccessRingEntry{.region_id = 1 + seq % 7, .offset = seq * 64, .length = 64,
                         .count = static_cast<uint32_t>(1 + seq % 3), .flags = (seq & 1) ? kAccessWrite : 0u};
}

struct Ring {
  explicit Ring(uint32_t entries) {
    auto m = AccessRingMemory::create(entries);
    EXPECT_TRUE(m) << m.error().message;
    memory = std::move(*m);
    auto p = AccessRingProducer::attach(memory.bytes());
    EXPECT_TRUE(p) << p.error().message;
    producer = *p;
    auto c = AccessRingConsumer::attach(memory.bytes(), entries);
    EXPECT_TRUE(c) << c.error().message;
    consumer = *c;
  }
  AccessRingHeader& header() { return *reinterpret_cast<AccessRingHeader*>(memory.bytes().data()); }
  AccessRingEntry* slots() {
    return reinterpret_cast<AccessRingEntry*>(memory.bytes().data() + kAccessRingHeaderBytes);
  }
  AccessRingMemory memory;
  AccessRingProducer producer;
  AccessRingConsumer consumer;
};

TEST(AccessRing, LayoutIsStable) {
  EXPECT_EQ(sizeof(AccessRingEntry), 32u);
  EXPECT_EQ(offsetof(AccessRingHeader, producer), 64u);
  EXPECT_EQ(offsetof(AccessRingHeader, consumer), 128u);
  EXPECT_EQ(offsetof(AccessRingHeader, dropped), 192u);
  EXPECT_EQ(access_ring_bytes(4096), 4096u * 32 + 256);
}

TEST(AccessRing, CreateRejectsBadCounts) {
  EXPECT_EQ(AccessRingMemory::create(0).error().code, EINVAL);
  EXPECT_EQ(AccessRingMemory::create(3).error().code, EINVAL);
  EXPECT_EQ(AccessRingMemory::create(1u << 21).error().code, EINVAL);
}

TEST(AccessRing, MemfdIsSealedAgainstResizing) {
  Ring ring(64);
  const int seals = ::fcntl(ring.memory.fd(), F_GET_SEALS);
  ASSERT_GE(seals, 0);
  EXPECT_TRUE(seals & F_SEAL_SHRINK);
  EXPECT_TRUE(seals & F_SEAL_GROW);
  EXPECT_TRUE(seals & F_SEAL_SEAL);
  EXPECT_NE(::ftruncate(ring.memory.fd(), 0), 0);
}

TEST(AccessRing, PushThenDrainKeepsOrder) {
  Ring ring(64);
  std::vector<AccessRingEntry> in;
  for (uint64_t i = 0; i < 40; ++i) in.push_back(entry(i));
  EXPECT_EQ(ring.producer.try_push(in), 40u);
  std::vector<AccessRingEntry> out;
  const auto stats = ring.consumer.drain(out);
  EXPECT_EQ(stats.entries, 40u);
  EXPECT_EQ(stats.rejected, 0u);
  EXPECT_EQ(out, in);
  out.clear();
  EXPECT_EQ(ring.consumer.drain(out).entries, 0u);
  EXPECT_TRUE(out.empty());
}

TEST(AccessRing, WrapsAround) {
  Ring ring(16);
  uint64_t next_in = 0;
  uint64_t next_out = 0;
  for (int round = 0; round < 100; ++round) {
    std::vector<AccessRingEntry> in;
    for (int i = 0; i < 11; ++i) in.push_back(entry(next_in++));
    ASSERT_EQ(ring.producer.try_push(in), 11u);
    std::vector<AccessRingEntry> out;
    ASSERT_EQ(ring.consumer.drain(out).entries, 11u);
    for (const auto& e : out) EXPECT_EQ(e, entry(next_out++));
  }
  EXPECT_EQ(ring.consumer.consumed(), 1100u);
}

TEST(AccessRing, FullRingDropsAndCounts) {
  Ring ring(8);
  std::vector<AccessRingEntry> in;
  for (uint64_t i = 0; i < 12; ++i) in.push_back(entry(i));
  EXPECT_EQ(ring.producer.try_push(in), 8u);
  EXPECT_EQ(ring.producer.dropped(), 4u);
  EXPECT_EQ(ring.producer.try_push(std::span(in).first(1)), 0u);
  EXPECT_EQ(ring.producer.dropped(), 5u);
  std::vector<AccessRingEntry> out;
  const auto stats = ring.consumer.drain(out, 3);  // a capped drain
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.producer_dropped, 5u);
  // Room again: the producer sees the freed slots.
  EXPECT_EQ(ring.producer.try_push(std::span(in).subspan(8, 3)), 3u);
  const auto rest = ring.consumer.drain(out);
  EXPECT_EQ(rest.entries, 8u);
  EXPECT_EQ(rest.producer_dropped, 0u);
  std::vector<AccessRingEntry> expected(in.begin(), in.begin() + 8);
  expected.insert(expected.end(), in.begin() + 8, in.begin() + 11);
  EXPECT_EQ(out, expected);
}

TEST(AccessRing, ProducerRefusesForeignMapping) {
  alignas(64) static std::byte buf[4096];
  std::memset(buf, 0x5a, sizeof buf);
  EXPECT_EQ(AccessRingProducer::attach(std::span(buf)).error().code, EPROTO);
  ASSERT_TRUE(access_ring_init(std::span(buf), 8));
  EXPECT_TRUE(AccessRingProducer::attach(std::span(buf)));
  EXPECT_EQ(AccessRingProducer::attach(std::span(buf).first(256 + 32)).error().code, EPROTO);
}

// Two threads, a small ring, a few hundred thousand entries: each arrives
// exactly once and in order; what the producer dropped is accounted for.
TEST(AccessRing, ConcurrentProducerConsumer) {
  constexpr uint64_t kTotal = 300000;
  Ring ring(1024);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    std::vector<AccessRingEntry> batch;
    uint64_t seq = 0;
    while (seq < kTotal) {
      batch.clear();
      for (int i = 0; i < 37 && seq + batch.size() < kTotal; ++i) batch.push_back(entry(seq + batch.size()));
      // Retry what did not fit so nothing is lost; the ring counts the misses.
      const size_t pushed = ring.producer.try_push(batch);
      seq += pushed;
      if (pushed < batch.size()) std::this_thread::yield();
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t expected = 0;
  uint64_t dropped = 0;
  std::vector<AccessRingEntry> out;
  bool in_order = true;
  while (true) {
    const bool finished = done.load(std::memory_order_acquire);
    out.clear();
    const auto stats = ring.consumer.drain(out, 500);
    dropped += stats.producer_dropped;
    ASSERT_EQ(stats.rejected, 0u);
    for (const auto& e : out) {
      if (e != entry(expected)) in_order = false;
      ++expected;
    }
    if (finished && out.empty()) break;
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kTotal);
  EXPECT_FALSE(ring.consumer.broken());
  out.clear();
  dropped += ring.consumer.drain(out).producer_dropped;
  EXPECT_EQ(dropped, ring.producer.dropped());
}

// ------------------------------------------------------------------ hostile

TEST(AccessRingHostile, ProducerIndexTooFarAhead) {
  Ring ring(64);
  ring.header().producer = 65;  // more than the capacity ahead of consumer 0
  std::vector<AccessRingEntry> out;
  EXPECT_EQ(ring.consumer.drain(out).entries, 0u);
  EXPECT_TRUE(ring.consumer.broken());
  ring.header().producer = 1;  // a broken ring stays broken
  ring.slots()[0] = entry(0);
  EXPECT_EQ(ring.consumer.drain(out).entries, 0u);
  EXPECT_TRUE(out.empty());
}

TEST(AccessRingHostile, ProducerIndexBehindConsumer) {
  Ring ring(64);
  std::vector<AccessRingEntry> in(10, entry(1));
  ring.producer.try_push(in);
  std::vector<AccessRingEntry> out;
  EXPECT_EQ(ring.consumer.drain(out).entries, 10u);
  ring.header().producer = 3;
  EXPECT_EQ(ring.consumer.drain(out).entries, 0u);
  EXPECT_TRUE(ring.consumer.broken());
}

TEST(AccessRingHostile, ConsumerIgnoresItsIndexInTheMapping) {
  Ring ring(64);
  std::vector<AccessRingEntry> in(4, entry(2));
  ring.producer.try_push(in);
  ring.header().consumer = 0xdeadbeefdeadbeefull;  // the client may scribble here too
  std::vector<AccessRingEntry> out;
  EXPECT_EQ(ring.consumer.drain(out).entries, 4u);
  EXPECT_FALSE(ring.consumer.broken());
  EXPECT_EQ(ring.header().consumer, 4u);
}

TEST(AccessRingHostile, MagicOverwritten) {
  Ring ring(64);
  ring.producer.try_push(std::vector<AccessRingEntry>(3, entry(3)));
  ring.header().magic = 0;
  std::vector<AccessRingEntry> out;
  EXPECT_EQ(ring.consumer.drain(out).entries, 0u);
  EXPECT_TRUE(ring.consumer.broken());
}

TEST(AccessRingHostile, GeometryOverwritten) {
  Ring ring(64);
  ring.header().entries = 1u << 20;  // a bigger ring than the mapping holds
  std::vector<AccessRingEntry> out;
  ring.header().producer = 1000;
  EXPECT_EQ(ring.consumer.drain(out).entries, 0u);
  EXPECT_TRUE(ring.consumer.broken());
}

TEST(AccessRingHostile, DroppedCounterGoingBackwards) {
  Ring ring(64);
  ring.header().dropped = 10;
  std::vector<AccessRingEntry> out;
  EXPECT_EQ(ring.consumer.drain(out).producer_dropped, 10u);
  ring.header().dropped = 5;
  ring.consumer.drain(out);
  EXPECT_TRUE(ring.consumer.broken());
}

TEST(AccessRingHostile, AbsurdEntriesAreRejectedNotTrusted) {
  Ring ring(64);
  std::vector<AccessRingEntry> in = {
      entry(1),
      {.region_id = ~0ull, .offset = ~0ull, .length = 64, .count = 1},  // offset + length overflows
      {.region_id = 1, .offset = 0, .length = 0, .count = 1},
      {.region_id = 1, .offset = 0, .length = 64, .count = 0},
      {.region_id = 1, .offset = 0, .length = 64, .count = 1, .flags = 0x80},
      {.region_id = 1, .offset = 0, .length = 64, .count = 1, .reserved = 9},
      {.region_id = ~0ull, .offset = 1ull << 62, .length = ~0u, .count = ~0u},  // well-formed; the source bounds it
      entry(2),
  };
  ASSERT_EQ(ring.producer.try_push(in), in.size());
  std::vector<AccessRingEntry> out;
  const auto stats = ring.consumer.drain(out);
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.rejected, 5u);
  EXPECT_EQ(out.front(), entry(1));
  EXPECT_EQ(out.back(), entry(2));
  EXPECT_FALSE(ring.consumer.broken());
}

// Random bytes over the whole mapping, many times: the consumer never reads
// past its mapping (the ring sits right before a PROT_NONE guard page) and
// never returns more than the capacity per drain.
TEST(AccessRingHostile, RandomScribbles) {
  constexpr uint32_t kEntries = 64;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = access_ring_bytes(kEntries);
  const size_t span_pages = (bytes + page - 1) / page;
  auto* base = static_cast<std::byte*>(
      ::mmap(nullptr, (span_pages + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  ASSERT_EQ(::mprotect(base + span_pages * page, page, PROT_NONE), 0);
  // Place the ring so its last byte touches the guard page.
  std::byte* ring_at = base + span_pages * page - bytes;
  ring_at -= reinterpret_cast<uintptr_t>(ring_at) % 64;
  std::span<std::byte> mapping(ring_at, bytes);
  std::mt19937_64 rng(1234);
  uint64_t broken = 0;
  for (int round = 0; round < 2000; ++round) {
    ASSERT_TRUE(access_ring_init(mapping, kEntries));
    auto consumer = AccessRingConsumer::attach(mapping, kEntries);
    ASSERT_TRUE(consumer);
    for (int step = 0; step < 4; ++step) {
      for (int k = 0; k < 16; ++k) {
        const size_t at = rng() % (bytes / 8);
        const uint64_t value = rng();
        std::memcpy(mapping.data() + at * 8, &value, 8);
      }
      if (rng() % 2) reinterpret_cast<AccessRingHeader*>(mapping.data())->magic = kAccessRingMagic;
      if (rng() % 2) reinterpret_cast<AccessRingHeader*>(mapping.data())->entries = kEntries;
      if (rng() % 2) reinterpret_cast<AccessRingHeader*>(mapping.data())->producer = rng() % 200;
      std::vector<AccessRingEntry> out;
      const auto stats = consumer->drain(out);
      EXPECT_LE(stats.entries + stats.rejected, kEntries);
      for (const auto& e : out) EXPECT_TRUE(access_entry_well_formed(e));
    }
    broken += consumer->broken() ? 1 : 0;
  }
  EXPECT_GT(broken, 0u);
  ::munmap(base, (span_pages + 1) * page);
}

}  // namespace
}  // namespace cxlpool::proto
