// SPDX-License-Identifier: Apache-2.0
// Per-I/O priorities: prio/prioclass, cmdprio_percentage, cmdprio_bssplit
// and the value fio's logs carry.
#include <gtest/gtest.h>

#include "job/priority_parsers.hpp"
#include "run/io_priority.hpp"

namespace cxlpool::io {
namespace {

TEST(IoPriority, JobValueFromPrioAndPrioclass) {
  JobSpec j;
  EXPECT_EQ(IoPriority(j).job_value(), 0);
  j.prioclass = 2;
  j.prio = 7;
  EXPECT_EQ(IoPriority(j).job_value(), (2 << 13) | 7);
  j.prioclass = -1;
  j.prio = 3;
  EXPECT_EQ(IoPriority(j).job_value(), (2 << 13) | 3);  // a level alone is best-effort
  j.prioclass = 3;
  j.prio = -1;
  EXPECT_EQ(IoPriority(j).job_value(), 3 << 13);
  EXPECT_FALSE(IoPriority(j).per_io());
}

TEST(IoPriority, CmdprioPercentageGivesThatShareTheHighClass) {
  JobSpec j;
  j.prioclass = 3;
  j.cmdprio_percentage[kReadDir] = 20;
  const IoPriority p(j);
  ASSERT_TRUE(p.per_io());
  Rng rng(5);
  int high = 0, idle = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::uint16_t v = p.pick(kReadDir, 4096, rng);
    if (v == (1 << 13)) ++high;  // cmdprio_class defaults to RT, cmdprio to 0
    else if (v == (3 << 13)) ++idle;
  }
  EXPECT_EQ(high + idle, 10000);
  EXPECT_GT(high, 1700);
  EXPECT_LT(high, 2300);
  // Writes have no percentage: always the job's.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p.pick(kWriteDir, 4096, rng), 3 << 13);
}

TEST(IoPriority, CmdprioBssplitPicksBySizeAndShare) {
  auto split = parse_cmdprio_bssplit("64k/25/1/1:64k/75/3/2:1m/0", 1024);
  ASSERT_TRUE(split.has_value()) << split.error().message;
  JobSpec j;
  j.cmdprio_bssplit[kReadDir] = *split;
  const IoPriority p(j);
  Rng rng(9);
  int rt = 0, idle = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::uint16_t v = p.pick(kReadDir, 64 * 1024, rng);
    if (v == ((1 << 13) | 1)) ++rt;
    else if (v == ((3 << 13) | 2)) ++idle;
  }
  EXPECT_EQ(rt + idle, 10000);
  EXPECT_GT(rt, 2200);
  EXPECT_LT(rt, 2800);
  EXPECT_EQ(p.pick(kReadDir, 1 << 20, rng), 0);  // 0%: the job's (none)
  EXPECT_EQ(p.pick(kReadDir, 8192, rng), 0);     // a size not listed
}

TEST(IoPriority, ShortEntriesTakeCmdprioClassAndLevel) {
  auto split = parse_cmdprio_bssplit("64k/100:1m/0", 1024);
  ASSERT_TRUE(split.has_value());
  JobSpec j;
  j.cmdprio_bssplit[kWriteDir] = *split;
  j.cmdprio_class[kWriteDir] = 2;
  j.cmdprio[kWriteDir] = 5;
  Rng rng(1);
  EXPECT_EQ(IoPriority(j).pick(kWriteDir, 64 * 1024, rng), (2 << 13) | 5);
}

TEST(IoPriority, BssplitErrors) {
  EXPECT_FALSE(parse_cmdprio_bssplit("64k/60:64k/50", 1024).has_value());  // 110% of 64k
  EXPECT_FALSE(parse_cmdprio_bssplit("64k/10/1", 1024).has_value());
  EXPECT_FALSE(parse_cmdprio_bssplit("64k/10/4/0", 1024).has_value());     // no class 4
  EXPECT_FALSE(parse_cmdprio_bssplit("64k/10/1/8", 1024).has_value());     // no level 8
  EXPECT_FALSE(parse_cmdprio_bssplit("0/10", 1024).has_value());
}

TEST(IoPriority, LoggedValue) {
  EXPECT_EQ(logged_priority((1 << 13) | 3, true), (1 << 13) | 3);
  EXPECT_EQ(logged_priority((1 << 13) | 3, false), 1);
  EXPECT_EQ(logged_priority(3 << 13, false), 0);
  EXPECT_EQ(logged_priority(0, true), 0);
}

}  // namespace
}  // namespace cxlpool::io
