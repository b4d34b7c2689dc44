// SPDX-License-Identifier: Apache-2.0
// The perf ring-buffer record parser on crafted byte buffers.
#include <linux/perf_event.h>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "perf_records.hpp"

namespace cxlpool::drivers {
namespace {

constexpr uint64_t kType =
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_PHYS_ADDR;

// Builds records the way the kernel lays them out.
class Records {
 public:
  Records& sample(uint64_t ip, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t weight, uint64_t phys) {
    header(PERF_RECORD_SAMPLE, 8 + 5 * 8);
    u64(ip);
    u32(pid);
    u32(tid);
    u64(addr);
    u64(weight);
    u64(phys);
    return *this;
  }
  Records& lost(uint64_t n) {
    header(PERF_RECORD_LOST, 8 + 16);
    u64(77);  // id
    u64(n);
    return *this;
  }
  Records& lost_samples(uint64_t n) {
    header(PERF_RECORD_LOST_SAMPLES, 8 + 8);
    u64(n);
    return *this;
  }
  Records& raw_header(uint32_t type, uint16_t size) {
    header(type, size);
    return *this;
  }
  Records& u64(uint64_t v) { return put(&v, 8); }
  Records& u32(uint32_t v) { return put(&v, 4); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void header(uint32_t type, uint16_t size) {
    perf_event_header h{type, 0, size};
    put(&h, sizeof h);
  }
  Records& put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

// A ring of `size` bytes holding `bytes` from free-running position `tail`.
struct Ring {
  Ring(uint64_t size, uint64_t tail, const std::vector<uint8_t>& bytes) : data(size, 0xee), tail(tail) {
    for (size_t i = 0; i < bytes.size(); ++i) data[(tail + i) % size] = bytes[i];
    head = tail + bytes.size();
  }
  std::vector<uint8_t> data;
  uint64_t tail;
  uint64_t head;
};

PerfRecordParser parser() {
  auto p = PerfRecordParser::make(kType);
  EXPECT_TRUE(p);
  return *p;
}

// What draining `bytes`, put in a ring of `ring_bytes` from free-running
// position `tail`, reports, and the samples it delivers.
struct Drained {
  PerfDrainStats stats;
  std::vector<PerfSample> got;
};

Drained drain(const std::vector<uint8_t>& bytes, uint64_t ring_bytes = 4096, uint64_t tail = 0) {
  const Ring ring(ring_bytes, tail, bytes);
  Drained d;
  d.stats = parser().drain(ring.data.data(), ring.data.size(), ring.tail, ring.head,
                           [&](const PerfSample& s) { d.got.push_back(s); });
  return d;
}

TEST(PerfRecords, LayoutSize) {
  EXPECT_EQ(parser().sample_body_bytes(), 40u);
  auto all = PerfRecordParser::make(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                    PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU |
                                    PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->sample_body_bytes(), 72u);
}

TEST(PerfRecords, RejectsVariableSizedLayouts) {
  for (uint64_t bit : {PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_RAW, PERF_SAMPLE_READ, PERF_SAMPLE_BRANCH_STACK,
                       PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER, PERF_SAMPLE_REGS_INTR}) {
    auto p = PerfRecordParser::make(kType | bit);
    ASSERT_FALSE(p) << bit;
    EXPECT_EQ(p.error().code, EINVAL);
  }
}

TEST(PerfRecords, DecodesSamplesAndCountsLost) {
  Records r;
  r.sample(0x401000, 100, 101, 0x7f0000001234, 250, 0x12345678)
      .lost(5)
      .sample(0x401008, 100, 102, 0x7f0000002000, 40, 0)
      .lost_samples(2);
  const auto [stats, got] = drain(r.bytes());
  EXPECT_EQ(stats.samples, 2u);
  EXPECT_EQ(stats.lost, 7u);
  EXPECT_EQ(stats.malformed, 0u);
  EXPECT_FALSE(stats.desync);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].ip, 0x401000u);
  EXPECT_EQ(got[0].pid, 100u);
  EXPECT_EQ(got[0].tid, 101u);
  EXPECT_EQ(got[0].addr, 0x7f0000001234u);
  EXPECT_EQ(got[0].weight, 250u);
  EXPECT_EQ(got[0].phys_addr, 0x12345678u);
  EXPECT_EQ(got[1].tid, 102u);
  EXPECT_EQ(got[1].phys_addr, 0u);
}

TEST(PerfRecords, FollowsWrapAroundAtEveryOffset) {
  Records r;
  for (uint32_t i = 0; i < 6; ++i) r.sample(i, 7, 7, 0x1000 * (i + 1), i, 0);
  r.lost(3);  // 6 * 48 + 24 = 312 bytes in a 512-byte ring
  // Start anywhere so that headers and bodies straddle the end of the ring.
  for (uint64_t tail = 0; tail < 1024; tail += 8) {
    const auto [stats, got] = drain(r.bytes(), 512, (1ULL << 40) + tail);
    ASSERT_EQ(stats.samples, 6u) << tail;
    EXPECT_EQ(stats.lost, 3u);
    EXPECT_EQ(stats.malformed, 0u);
    for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(got[i].addr, 0x1000u * (i + 1)) << tail;
  }
}

TEST(PerfRecords, SkipsOtherRecordTypes) {
  Records r;
  r.raw_header(PERF_RECORD_MMAP, 24).u64(1).u64(2).sample(1, 2, 3, 0x5000, 0, 0);
  const auto [stats, got] = drain(r.bytes());
  EXPECT_EQ(stats.other, 1u);
  EXPECT_EQ(stats.samples, 1u);
}

TEST(PerfRecords, WrongSampleSizeIsMalformedButParsingGoesOn) {
  Records r;
  r.raw_header(PERF_RECORD_SAMPLE, 8 + 32).u64(1).u64(2).u64(3).u64(4);  // one field short
  r.sample(1, 2, 3, 0x6000, 0, 0);
  const auto [stats, got] = drain(r.bytes());
  EXPECT_EQ(stats.malformed, 1u);
  EXPECT_FALSE(stats.desync);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].addr, 0x6000u);
}

TEST(PerfRecords, ShortLostRecordsAreMalformed) {
  Records r;
  r.raw_header(PERF_RECORD_LOST, 16).u64(9).raw_header(PERF_RECORD_LOST_SAMPLES, 8);
  const auto [stats, got] = drain(r.bytes());
  EXPECT_EQ(stats.malformed, 2u);
  EXPECT_EQ(stats.lost, 0u);
}

TEST(PerfRecords, UntrustworthyHeadersStopTheWalk) {
  struct Case {
    const char* what;
    Records records;
  };
  std::vector<Case> cases;
  cases.push_back({"size below a header", Records().raw_header(PERF_RECORD_SAMPLE, 4)});
  cases.push_back({"size zero", Records().raw_header(PERF_RECORD_SAMPLE, 0)});
  cases.push_back({"size not a multiple of 8", Records().raw_header(PERF_RECORD_SAMPLE, 20).u64(0).u32(0)});
  cases.push_back({"record past head", Records().raw_header(PERF_RECORD_SAMPLE, 48).u64(1)});
  cases.push_back({"partial header", Records().u32(0)});
  for (auto& c : cases) {
    Records r;
    r.sample(1, 2, 3, 0x7000, 0, 0);
    std::vector<uint8_t> bytes = r.bytes();
    bytes.insert(bytes.end(), c.records.bytes().begin(), c.records.bytes().end());
    const auto [stats, got] = drain(bytes);
    EXPECT_TRUE(stats.desync) << c.what;
    EXPECT_EQ(stats.malformed, 1u) << c.what;
    EXPECT_EQ(stats.samples, 1u) << c.what << ": records before the damage still count";
  }
}

TEST(PerfRecords, ImpossibleHeadIsRejected) {
  std::vector<uint8_t> ring(256, 0);
  std::vector<PerfSample> got;
  const auto on = [&](const PerfSample& s) { got.push_back(s); };
  auto stats = parser().drain(ring.data(), ring.size(), 0, 257, on);  // more than the ring holds
  EXPECT_TRUE(stats.desync);
  stats = parser().drain(ring.data(), ring.size(), 100, 50, on);  // head behind tail
  EXPECT_TRUE(stats.desync);
  stats = parser().drain(ring.data(), 100, 0, 8, on);  // not a power of two
  EXPECT_TRUE(stats.desync);
  stats = parser().drain(ring.data(), ring.size(), 64, 64, on);  // empty
  EXPECT_FALSE(stats.desync);
  EXPECT_TRUE(got.empty());
}

TEST(PerfRecords, RandomBytesNeverCrash) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> ring(512);
    for (auto& b : ring) b = static_cast<uint8_t>(rng());
    // Sometimes plant plausible headers so the walk gets further.
    if (round % 2 == 0) {
      for (size_t off = 0; off + 8 <= ring.size(); off += 48) {
        perf_event_header h{static_cast<uint32_t>(rng() % 16), 0, static_cast<uint16_t>((rng() % 8) * 8)};
        std::memcpy(ring.data() + off, &h, sizeof h);
      }
    }
    const uint64_t tail = rng() % 4096;
    const uint64_t head = tail + rng() % 600;
    uint64_t delivered = 0;
    const auto stats = parser().drain(ring.data(), ring.size(), tail, head,
                                      [&](const PerfSample&) { ++delivered; });
    EXPECT_EQ(delivered, stats.samples);
    EXPECT_LE(stats.samples * 48, head - tail);
  }
}

}  // namespace
}  // namespace cxlpool::drivers
