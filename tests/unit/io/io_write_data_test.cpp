// SPDX-License-Identifier: Apache-2.0
// Deduplicable and compressible write data: the share of repeated buffers,
// the working set, the zero share of each compression chunk.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "run/write_data.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint32_t kBs = 4096;

// Buffers written, keyed by their content: how many distinct ones, and
// the largest number of repeats of one.
std::map<std::string, int> write_many(WriteData& w, int n, Rng& rng) {
  std::map<std::string, int> seen;
  std::vector<std::byte> buf(kBs);
  for (int i = 0; i < n; ++i) {
    w.fill(buf.data(), kBs, rng);
    ++seen[std::string(reinterpret_cast<const char*>(buf.data()), kBs)];
  }
  return seen;
}

TEST(WriteData, RepeatModeRepeatsThatShareOfWrites) {
  JobSpec j;
  j.dedupe_percentage = 50;
  WriteData w(j, 100000, 7);
  Rng rng(3);
  const auto seen = write_many(w, 4000, rng);
  // About half the writes are unique; the rest repeat the write before.
  EXPECT_GT(seen.size(), 1800u);
  EXPECT_LT(seen.size(), 2200u);
  EXPECT_EQ(w.deduplicated(), 4000 - seen.size());
}

TEST(WriteData, WorkingSetDedupesFromTheFirstUniqueWrites) {
  JobSpec j;
  j.dedupe_percentage = 90;
  j.dedupe_working_set = true;
  j.dedupe_working_set_percentage = 1;  // 1% of 10000 blocks: 100 entries
  WriteData w(j, 10000, 7);
  Rng rng(11);
  const auto seen = write_many(w, 5000, rng);
  // ~500 unique writes (100 of them the working set), the other ~4500
  // copies of working-set entries.
  EXPECT_GT(seen.size(), 400u);
  EXPECT_LT(seen.size(), 600u);
  int repeated = 0;
  for (const auto& [content, count] : seen) repeated += count > 1;
  EXPECT_LE(repeated, 100);
  EXPECT_GT(repeated, 90);
}

TEST(WriteData, GlobalWorkingSetsAreSharedBetweenJobs) {
  JobSpec j;
  j.dedupe_percentage = 100;
  j.dedupe_working_set = true;
  j.dedupe_global = true;
  j.dedupe_working_set_percentage = 100;
  WriteData a(j, 1, 1), b(j, 1, 2);  // one entry, two jobs with other seeds
  Rng rng(1);
  std::vector<std::byte> x(kBs), y(kBs);
  a.fill(x.data(), kBs, rng);  // nothing in the set yet: a unique write fills entry 0
  b.fill(y.data(), kBs, rng);  // dedupes from it
  EXPECT_EQ(std::memcmp(x.data(), y.data(), kBs), 0);
}

TEST(WriteData, CompressionZeroesTheTailOfEachChunk) {
  JobSpec j;
  j.buffer_compress_percentage = 75;
  j.buffer_compress_chunk = 1024;
  WriteData w(j, 1000, 5);
  Rng rng(2);
  std::vector<std::byte> buf(kBs, std::byte{0xff});
  w.fill(buf.data(), kBs, rng);
  for (std::uint32_t chunk = 0; chunk < kBs; chunk += 1024) {
    int zeros_in_tail = 0, zeros_in_head = 0;
    for (std::uint32_t i = 0; i < 1024; ++i) {
      const bool zero = buf[chunk + i] == std::byte{0};
      (i < 256 ? zeros_in_head : zeros_in_tail) += zero;
    }
    EXPECT_EQ(zeros_in_tail, 768) << chunk;
    EXPECT_LT(zeros_in_head, 8) << chunk;
  }
  EXPECT_FALSE(WriteData::wanted(JobSpec{}));
}

}  // namespace
}  // namespace cxlpool::io
