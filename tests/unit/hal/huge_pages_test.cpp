// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/huge_pages.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace cxlpool::hal {
namespace {

using test::TempDir;

constexpr const char* kMeminfo =
    "MemTotal:       24567890 kB\n"
    "MemFree:        20000000 kB\n"
    "HugePages_Total:      10\n"
    "HugePages_Free:        6\n"
    "HugePages_Rsvd:        2\n"
    "HugePages_Surp:        1\n"
    "Hugepagesize:       2048 kB\n"
    "Hugetlb:           20480 kB\n";

TEST(HugePages, ReadsPool) {
  TempDir tree;
  tree.write("/proc/meminfo", kMeminfo);
  tree.write("/proc/sys/vm/nr_hugepages", "9\n");
  auto pool = read_huge_page_pool(SysfsRoot(tree.path()));
  ASSERT_TRUE(pool.has_value()) << pool.error().message;
  EXPECT_EQ(pool->page_size, 2u << 20);
  EXPECT_EQ(pool->configured, 9u);
  EXPECT_EQ(pool->total, 10u);
  EXPECT_EQ(pool->free, 6u);
  EXPECT_EQ(pool->reserved, 2u);
  EXPECT_EQ(pool->surplus, 1u);
  EXPECT_EQ(pool->available(), 4u);
}

TEST(HugePages, WithoutSysctlUsesTotalMinusSurplus) {
  TempDir tree;
  tree.write("/proc/meminfo", kMeminfo);
  auto pool = read_huge_page_pool(SysfsRoot(tree.path()));
  ASSERT_TRUE(pool.has_value()) << pool.error().message;
  EXPECT_EQ(pool->configured, 9u);
}

TEST(HugePages, KernelWithoutHugetlb) {
  TempDir tree;
  tree.write("/proc/meminfo", "MemTotal: 1024 kB\nMemFree: 512 kB\n");
  auto pool = read_huge_page_pool(SysfsRoot(tree.path()));
  ASSERT_FALSE(pool.has_value());
  EXPECT_EQ(pool.error().code, ENOTSUP);
}

TEST(HugePages, MalformedSysctlNamesFile) {
  TempDir tree;
  tree.write("/proc/meminfo", kMeminfo);
  tree.write("/proc/sys/vm/nr_hugepages", "nine\n");
  auto pool = read_huge_page_pool(SysfsRoot(tree.path()));
  ASSERT_FALSE(pool.has_value());
  EXPECT_NE(pool.error().message.find(tree.resolve("/proc/sys/vm/nr_hugepages").string()),
            std::string::npos)
      << pool.error().message;
}

TEST(HugePages, RealHost) {
  auto pool = read_huge_page_pool(SysfsRoot("/"));
  if (!pool && pool.error().code == ENOTSUP) GTEST_SKIP() << pool.error().message;
  ASSERT_TRUE(pool.has_value()) << pool.error().message;
  EXPECT_GE(pool->page_size, 4096u * 512);
  EXPECT_LE(pool->free, pool->total);
}

}  // namespace
}  // namespace cxlpool::hal
