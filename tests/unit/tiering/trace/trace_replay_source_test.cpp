// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/trace_replay_source.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <map>

#include "cxlpool/tiering/trace_file.hpp"
#include "cxlpool/tiering/workloads.hpp"

namespace cxlpool::tiering {
namespace {

using hal::PageAccess;

TraceReplayConfig by_time(std::uint64_t epoch_ns) {
  TraceReplayConfig c;
  c.epoch_ns = epoch_ns;
  return c;
}

TEST(TraceReplaySource, RejectsBadConfigAndRecords) {
  TraceReplayConfig c;
  c.epoch_ns = 0;
  c.epoch_records = 0;
  EXPECT_EQ(TraceReplaySource::from_records({}, c).error().code, EINVAL);
  std::vector<TraceRecord> back = {{10, 0, 8, false}, {5, 64, 8, false}};
  auto r = TraceReplaySource::from_records(back, by_time(100));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("record 1"), std::string::npos);
  EXPECT_EQ(TraceReplaySource::open("/nonexistent/trace", by_time(100)).error().code, ENOENT);
}

TEST(TraceReplaySource, EpochsFollowTraceTime) {
  // Epoch 0: [100, 200), epoch 1: [200, 300) empty, epoch 2: [300, 400).
  std::vector<TraceRecord> t = {
      {100, 0x1000, 64, false}, {150, 0x1040, 64, true}, {199, 0x5000, 8, false},
      {350, 0x1000, 8, false},  {399, 0x1000, 4096, false},
  };
  auto src = TraceReplaySource::from_records(t, by_time(100));
  ASSERT_TRUE(src.has_value()) << src.error().message;
  EXPECT_EQ((*src)->name(), "trace");
  EXPECT_TRUE((*src)->traits().word_masks);
  EXPECT_TRUE((*src)->traits().exact_counts);
  EXPECT_FALSE((*src)->traits().virtual_addresses);

  std::vector<PageAccess> out;
  ASSERT_TRUE((*src)->collect(out).has_value());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (PageAccess{hal::AddressSpace::kTrace, 0, 0x1000, 2, 0b11, 1}));
  EXPECT_EQ(out[1], (PageAccess{hal::AddressSpace::kTrace, 0, 0x5000, 1, 0b1, 1}));
  EXPECT_EQ((*src)->last_epoch_start_ns(), 100u);
  EXPECT_EQ((*src)->last_epoch_end_ns(), 200u);
  EXPECT_EQ((*src)->accesses_total(), 3u);
  EXPECT_FALSE((*src)->finished());

  out.clear();
  ASSERT_TRUE((*src)->collect(out).has_value());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ((*src)->last_epoch().index, 1u);

  ASSERT_TRUE((*src)->collect(out).has_value());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].address, 0x1000u);
  EXPECT_EQ(out[0].count, 2u);
  EXPECT_EQ(out[0].words, ~0ull);
  EXPECT_TRUE((*src)->finished());
  EXPECT_EQ((*src)->accesses_total(), 5u);
  // The HPT view of the same epoch.
  const ControllerEpoch& e = (*src)->last_epoch();
  ASSERT_EQ(e.hpt_hot_pages.size(), 1u);
  EXPECT_EQ(e.hpt_hot_pages[0].key, 1u);
  EXPECT_GE(e.hpt_hot_pages[0].count, 2u);

  out.clear();
  ASSERT_TRUE((*src)->collect(out).has_value());
  EXPECT_TRUE(out.empty());
}

TEST(TraceReplaySource, EpochsByRecordCount) {
  std::vector<TraceRecord> t;
  for (std::uint64_t i = 0; i < 10; ++i) t.push_back({i, i * 4096, 8, false});
  TraceReplayConfig c;
  c.epoch_ns = 0;
  c.epoch_records = 4;
  auto src = TraceReplaySource::from_span(t, c);
  ASSERT_TRUE(src.has_value());
  std::vector<std::size_t> sizes;
  while (!(*src)->finished()) {
    std::vector<PageAccess> out;
    ASSERT_TRUE((*src)->collect(out).has_value());
    sizes.push_back(out.size());
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4, 2}));
}

// Replay from a file and from memory agree, and their sums match the
// generated trace exactly.
TEST(TraceReplaySource, FileAndMemoryReplayAgreeWithTheTrace) {
  WorkloadConfig w;
  w.kind = WorkloadKind::kSparseKv;
  w.footprint_bytes = 16ull << 20;
  w.accesses = 300'000;
  w.duration_ns = 1'000'000'000;
  auto trace = generate_workload(w);
  ASSERT_TRUE(trace.has_value());
  std::string path = ::testing::TempDir() + "replay_" + std::to_string(::getpid()) + ".trace";
  ASSERT_TRUE(write_trace(path, *trace).has_value());

  auto from_file = TraceReplaySource::open(path, by_time(100'000'000));
  auto from_memory = TraceReplaySource::from_span(*trace, by_time(100'000'000));
  ASSERT_TRUE(from_file.has_value()) << from_file.error().message;
  ASSERT_TRUE(from_memory.has_value());
  std::map<std::uint64_t, std::uint64_t> counts;
  int epochs = 0;
  std::size_t sparse = 0, pages = 0;
  while (!(*from_memory)->finished()) {
    std::vector<PageAccess> a, b;
    ASSERT_TRUE((*from_file)->collect(a).has_value());
    ASSERT_TRUE((*from_memory)->collect(b).has_value());
    ASSERT_EQ(a, b);
    EXPECT_EQ((*from_file)->last_epoch().hpt_hot_pages, (*from_memory)->last_epoch().hpt_hot_pages);
    for (const PageAccess& p : a) {
      EXPECT_EQ(p.address % 4096, 0u);
      counts[p.address] += p.count;
      sparse += std::popcount(p.words) <= 16;
      ++pages;
    }
    ++epochs;
  }
  EXPECT_TRUE((*from_file)->finished());
  EXPECT_EQ(epochs, 10);
  EXPECT_EQ((*from_file)->accesses_total(), w.accesses);
  std::map<std::uint64_t, std::uint64_t> expect;
  for (const TraceRecord& r : *trace) ++expect[r.address & ~4095ull];  // no generated record crosses a page
  EXPECT_EQ(counts, expect);
  // Per epoch, the sparse-kv trace is overwhelmingly sparse.
  EXPECT_GT(static_cast<double>(sparse) / pages, 0.8);
  std::filesystem::remove(path);
}

TEST(TraceReplaySource, CorruptFileSurfacesInCollect) {
  std::vector<TraceRecord> t;
  for (std::uint64_t i = 0; i < 100; ++i) t.push_back({i, i * 64, 8, false});
  auto bytes = *encode_trace(t);
  bytes[kTraceHeaderBytes + 50 * kTraceRecordBytes + 16] = std::byte{0};  // record 50: size 0
  std::string path = ::testing::TempDir() + "corrupt_" + std::to_string(::getpid()) + ".trace";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  auto src = TraceReplaySource::open(path, by_time(1'000'000));
  ASSERT_TRUE(src.has_value());
  std::vector<PageAccess> out;
  auto r = (*src)->collect(out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EBADMSG);
  EXPECT_NE(r.error().message.find("record 50"), std::string::npos) << r.error().message;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cxlpool::tiering
