// SPDX-License-Identifier: Apache-2.0
// ClientReportSource: entries from a ring become per-page accesses of pool
// regions with the right word masks; foreign regions, out-of-range bytes and
// broken rings are counted and never forwarded.
#include "cxlpool/tiering/client_report_source.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace cxlpool::tiering {
namespace {

using proto::AccessRingEntry;

constexpr uint64_t kPage = 4096;

// Session 1 holds region 10 (1 MiB) and region 11 (10 000 bytes).
std::optional<uint64_t> resolve(uint64_t session, uint64_t region) {
  if (session != 1) return std::nullopt;
  if (region == 10) return 1 << 20;
  if (region == 11) return 10000;
  return std::nullopt;
}

struct Fixture {
  explicit Fixture(uint32_t entries = 256) {
    memory = std::move(*proto::AccessRingMemory::create(entries));
    producer = *proto::AccessRingProducer::attach(memory.bytes());
    EXPECT_TRUE(source.add_ring(1, memory.bytes(), resolve));
  }
  void push(std::vector<AccessRingEntry> entries) { ASSERT_EQ(producer.try_push(entries), entries.size()); }
  std::map<std::pair<uint64_t, uint64_t>, hal::PageAccess> collect() {
    std::vector<hal::PageAccess> out;
    EXPECT_TRUE(source.collect(out));
    std::map<std::pair<uint64_t, uint64_t>, hal::PageAccess> by_page;
    for (const auto& a : out) {
      EXPECT_EQ(a.space, hal::AddressSpace::kPoolRegion);
      EXPECT_EQ(a.address % kPage, 0u);
      EXPECT_TRUE(by_page.emplace(std::pair{a.owner, a.address}, a).second) << "page repeated";
    }
    return by_page;
  }
  proto::AccessRingMemory memory;
  proto::AccessRingProducer producer;
  ClientReportSource source;
};

AccessRingEntry at(uint64_t region, uint64_t offset, uint32_t length, uint32_t count = 1) {
  return AccessRingEntry{.region_id = region, .offset = offset, .length = length, .count = count};
}

TEST(PageWordMask, Edges) {
  EXPECT_EQ(page_word_mask(0, 0, 1), 1ull);
  EXPECT_EQ(page_word_mask(0, 0, 64), 1ull);
  EXPECT_EQ(page_word_mask(0, 0, 65), 3ull);
  EXPECT_EQ(page_word_mask(0, 63, 2), 3ull);
  EXPECT_EQ(page_word_mask(0, 4095, 1), 1ull << 63);
  EXPECT_EQ(page_word_mask(0, 0, 4096), ~0ull);
  EXPECT_EQ(page_word_mask(0, 0, 100000), ~0ull);
  EXPECT_EQ(page_word_mask(4096, 4000, 200), 0x3ull);      // bytes 0..103 of page 1
  EXPECT_EQ(page_word_mask(0, 4000, 200), 0x3ull << 62);   // bytes 4000..4095 of page 0
  EXPECT_EQ(page_word_mask(8192, 0, 4096), 0ull);          // does not reach page 2
}

TEST(ClientReportSource, Traits) {
  ClientReportSource source;
  EXPECT_EQ(source.name(), "client");
  EXPECT_TRUE(source.traits().word_masks);
  EXPECT_TRUE(source.traits().exact_counts);
  EXPECT_FALSE(source.traits().virtual_addresses);
}

TEST(ClientReportSource, OneWordAndCounts) {
  Fixture f;
  f.push({at(10, 128, 8, 3), at(10, 130, 4, 2)});
  auto pages = f.collect();
  ASSERT_EQ(pages.size(), 1u);
  const auto& a = pages.at({10, 0});
  EXPECT_EQ(a.count, 5u);
  EXPECT_EQ(a.words, 1ull << 2);
  EXPECT_EQ(a.pages, 1u);
  EXPECT_EQ(f.source.accesses_total(), 5u);
  EXPECT_EQ(f.source.dropped_total(), 0u);
  EXPECT_TRUE(f.collect().empty()) << "an epoch hands out each access once";
}

TEST(ClientReportSource, WriteFlagIsAccepted) {
  Fixture f;
  auto e = at(10, 0, 64);
  e.flags = proto::kAccessWrite;
  f.push({e});
  EXPECT_EQ(f.collect().size(), 1u);
}

TEST(ClientReportSource, SpanAcrossPages) {
  Fixture f;
  // 4000..8291: the tail of page 0, all of page 1, the head of page 2 (bytes 0..99 -> words 0,1).
  f.push({at(10, 4000, 4292, 2)});
  auto pages = f.collect();
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages.at({10, 0}).words, 0x3ull << 62);
  EXPECT_EQ(pages.at({10, kPage}).words, ~0ull);
  EXPECT_EQ(pages.at({10, 2 * kPage}).words, 0x3ull);
  for (const auto& [key, a] : pages) EXPECT_EQ(a.count, 2u);
  EXPECT_EQ(f.source.accesses_total(), 2u);
}

TEST(ClientReportSource, LongSpanBecomesARun) {
  Fixture f;
  // 200 pages starting mid-page: 201 pages touched, 199 of them in full.
  f.push({at(10, 100, 200 * kPage)});
  std::vector<hal::PageAccess> out;
  ASSERT_TRUE(f.source.collect(out));
  ASSERT_EQ(out.size(), 3u);
  uint64_t covered = 0;
  bool saw_run = false;
  for (const auto& a : out) {
    covered += a.pages;
    if (a.pages > 1) {
      saw_run = true;
      EXPECT_EQ(a.address, kPage);
      EXPECT_EQ(a.pages, 199u);
      EXPECT_EQ(a.words, ~0ull);
    }
  }
  EXPECT_TRUE(saw_run);
  EXPECT_EQ(covered, 201u);
}

TEST(ClientReportSource, RejectsForeignRegionsAndOutOfRangeBytes) {
  Fixture f;
  f.push({
      at(10, 0, 64),           // fine
      at(12, 0, 64),           // region the session does not hold
      at(11, 9990, 10),        // last 10 bytes of region 11: fine
      at(11, 9990, 11),        // one byte past the end
      at(11, 10000, 1),        // starts at the end
      at(10, 1 << 20, 4096),   // past region 10
      at(10, 0, 0),            // malformed: length 0
  });
  auto pages = f.collect();
  EXPECT_EQ(pages.size(), 2u);
  EXPECT_TRUE(pages.contains({10, 0}));
  EXPECT_EQ(pages.at({11, 2 * kPage}).words, 1ull << 28);  // bytes 1798..1807 of page 2
  const auto c = f.source.counters();
  EXPECT_EQ(c.entries, 2u);
  EXPECT_EQ(c.rejected, 5u);
  EXPECT_EQ(f.source.dropped_total(), 5u);
  EXPECT_EQ(f.source.accesses_total(), 2u);
}

TEST(ClientReportSource, ProducerDropsAreCounted) {
  Fixture f(8);
  std::vector<AccessRingEntry> many(12, at(10, 0, 64));
  EXPECT_EQ(f.producer.try_push(many), 8u);
  f.collect();
  EXPECT_EQ(f.source.counters().producer_dropped, 4u);
  EXPECT_EQ(f.source.dropped_total(), 4u);
  EXPECT_EQ(f.source.accesses_total(), 8u);
}

TEST(ClientReportSource, BrokenRingIsCountedOnceAndIgnored) {
  Fixture f;
  f.push({at(10, 0, 64)});
  reinterpret_cast<proto::AccessRingHeader*>(f.memory.bytes().data())->producer = ~0ull;
  EXPECT_TRUE(f.collect().empty());
  f.collect();
  EXPECT_EQ(f.source.counters().broken_rings, 1u);
  EXPECT_EQ(f.source.counters().rings, 1u);
}

TEST(ClientReportSource, RingsComeAndGo) {
  ClientReportSource source;
  auto a = std::move(*proto::AccessRingMemory::create(64));
  auto b = std::move(*proto::AccessRingMemory::create(64));
  ASSERT_TRUE(source.add_ring(1, a.bytes(), resolve));
  EXPECT_EQ(source.add_ring(1, b.bytes(), resolve).error().code, EEXIST);
  EXPECT_EQ(source.add_ring(2, b.bytes().first(1000), resolve).error().code, EINVAL);
  EXPECT_EQ(source.add_ring(2, b.bytes(), nullptr).error().code, EINVAL);
  ASSERT_TRUE(source.add_ring(2, b.bytes(), resolve));
  EXPECT_EQ(source.counters().rings, 2u);

  // Session 2 holds nothing: its report is rejected.
  auto pb = *proto::AccessRingProducer::attach(b.bytes());
  AccessRingEntry e = at(10, 0, 64);
  pb.try_push(std::span(&e, 1));
  // What is left in a ring is drained when it goes.
  auto pa = *proto::AccessRingProducer::attach(a.bytes());
  pa.try_push(std::span(&e, 1));
  source.remove_ring(1);
  source.remove_ring(2, false);
  source.remove_ring(3);
  EXPECT_EQ(source.counters().rings, 0u);
  std::vector<hal::PageAccess> out;
  ASSERT_TRUE(source.collect(out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].owner, 10u);
  EXPECT_EQ(source.counters().rejected, 0u);  // ring 2 was removed undrained
}

TEST(ClientReportSource, DrainKeepsRingsEmptyBetweenEpochs) {
  Fixture f(16);
  for (int round = 0; round < 10; ++round) {
    std::vector<AccessRingEntry> batch(16, at(10, static_cast<uint64_t>(round) * kPage, 64));
    ASSERT_EQ(f.producer.try_push(batch), 16u);
    f.source.drain();
  }
  auto pages = f.collect();
  EXPECT_EQ(pages.size(), 10u);
  for (const auto& [key, a] : pages) EXPECT_EQ(a.count, 16u);
  EXPECT_EQ(f.source.dropped_total(), 0u);
}

}  // namespace
}  // namespace cxlpool::tiering
