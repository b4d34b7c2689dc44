// SPDX-License-Identifier: Apache-2.0
// The lazy pager's bookkeeping without a kernel: which clone addresses come
// from where after drops, unmaps and moves; range checks; the latency
// histogram; the raw message layout the freestanding sender builds.
#include <fcntl.h>
#include <sys/socket.h>

#include <cstddef>

#include <gtest/gtest.h>

#include "cxlpool/ckpt/lazy_pager_counters.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/ckpt/uffd_raw.hpp"
#include "range_map.hpp"

namespace cxlpool::ckpt::lazy {
namespace {

constexpr uint64_t P = kPageSize;

TEST(LazyRangeMap, LookupInsideAndBetween) {
  RangeMap m;
  m.insert({10 * P, 4 * P, 100 * P});
  m.insert({20 * P, 2 * P, 0});
  auto hit = m.lookup(11 * P);
  EXPECT_TRUE(hit.from_source);
  EXPECT_EQ(hit.source_offset, 101 * P);
  EXPECT_EQ(hit.end, 14 * P);
  hit = m.lookup(14 * P);
  EXPECT_FALSE(hit.from_source);
  EXPECT_EQ(hit.end, 20 * P);  // zeros up to the next range
  hit = m.lookup(5 * P);
  EXPECT_FALSE(hit.from_source);
  EXPECT_EQ(hit.end, 10 * P);
  EXPECT_EQ(m.lookup(30 * P).end, UINT64_MAX);
}

TEST(LazyRangeMap, EraseSplits) {
  RangeMap m;
  m.insert({0, 10 * P, 50 * P});
  m.erase(3 * P, 5 * P);
  auto r = m.ranges();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].addr, 0u);
  EXPECT_EQ(r[0].length, 3 * P);
  EXPECT_EQ(r[1].addr, 5 * P);
  EXPECT_EQ(r[1].length, 5 * P);
  EXPECT_EQ(r[1].source_offset, 55 * P);
  m.erase(0, 100 * P);
  EXPECT_TRUE(m.empty());
}

TEST(LazyRangeMap, MoveCarriesOffsetsAndLeavesZeros) {
  RangeMap m;
  m.insert({0, 4 * P, 8 * P});
  m.insert({4 * P, 4 * P, 40 * P});
  m.insert({100 * P, P, 0});
  m.move(2 * P, 100 * P, 4 * P);  // the second half of one range, the first of the other
  EXPECT_FALSE(m.lookup(2 * P).from_source);
  EXPECT_FALSE(m.lookup(5 * P).from_source);
  EXPECT_EQ(m.lookup(P).source_offset, 9 * P);
  EXPECT_EQ(m.lookup(100 * P).source_offset, 10 * P);
  EXPECT_EQ(m.lookup(102 * P).source_offset, 40 * P);
  EXPECT_EQ(m.lookup(103 * P).source_offset, 41 * P);
  EXPECT_EQ(m.lookup(6 * P).source_offset, 42 * P);
}

TEST(LazyRangeMap, ImageRunsGroupConsecutivePagesWithinARange) {
  RangeMap m;
  m.insert({0, 4 * P, 100 * P});
  m.insert({4 * P, 4 * P, 0});  // adjacent but elsewhere in the image
  std::vector<uint64_t> pages = {3 * P, 2 * P + 17, 4 * P, 5 * P, 2 * P, 9 * P /* not in the image */, 7 * P};
  auto runs = image_runs(m, pages);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].addr, 2 * P);
  EXPECT_EQ(runs[0].end, 4 * P);
  EXPECT_EQ(runs[0].source_offset, 102 * P);
  EXPECT_EQ(runs[1].addr, 4 * P);
  EXPECT_EQ(runs[1].end, 6 * P);
  EXPECT_EQ(runs[1].source_offset, 0u);
  EXPECT_EQ(runs[2].addr, 7 * P);
  EXPECT_EQ(runs[2].source_offset, 3 * P);
}

TEST(LazyRangeMap, CheckRanges) {
  EXPECT_TRUE(check_ranges({{0, P, 0}, {P, P, P}}, 2 * P));
  EXPECT_FALSE(check_ranges({{0, P, P}, {P, P, 0}}, P));           // beyond the image
  EXPECT_FALSE(check_ranges({{0, 2 * P, 0}, {P, P, 0}}, 4 * P));   // overlap
  EXPECT_FALSE(check_ranges({{1, P, 0}}, 4 * P));                  // unaligned
  EXPECT_FALSE(check_ranges({{0, 0, 0}}, 4 * P));                  // empty
  EXPECT_FALSE(check_ranges({{UINT64_MAX - P + 1, 2 * P, 0}}, 4 * P));  // wraps
}

TEST(LazyLatencyHistogram, Quantiles) {
  LatencyHistogram h;
  EXPECT_EQ(h.quantile_upper_ns(0.5), 0u);
  for (int i = 0; i < 99; ++i) h.add(1000);  // bucket 9: [512, 1024)
  h.add(1'000'000);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.quantile_upper_ns(0.5), 1023u);
  EXPECT_EQ(h.quantile_upper_ns(1.0), (uint64_t{2} << 19) - 1);
  h.add(0);
  EXPECT_EQ(h.bucket(0), 1u);
}

TEST(LazyUffdRaw, MessageLayoutIsTheKernels) {
  EXPECT_EQ(sizeof(uffd_raw::RawMsgHdr), sizeof(msghdr));
  EXPECT_EQ(offsetof(uffd_raw::RawMsgHdr, control), offsetof(msghdr, msg_control));
  EXPECT_EQ(offsetof(uffd_raw::RawMsgHdr, flags), offsetof(msghdr, msg_flags));
  EXPECT_EQ(sizeof(uffd_raw::RawFdControl), CMSG_SPACE(sizeof(int)));
  EXPECT_EQ(offsetof(uffd_raw::RawFdControl, fd), CMSG_LEN(0));
  EXPECT_EQ(uffd_raw::kOpenFlags, O_CLOEXEC | O_NONBLOCK);
}

}  // namespace
}  // namespace cxlpool::ckpt::lazy
