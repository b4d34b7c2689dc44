// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/meminfo.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

namespace cxlpool::hal {
namespace {

// Parses `text` as the file `source` and checks each listed field's value.
void expect_fields(const char* text, const char* source,
                   std::initializer_list<std::pair<const char*, uint64_t>> fields) {
  auto info = parse_meminfo(text, source);
  ASSERT_TRUE(info.has_value()) << info.error().message;
  for (const auto& [name, value] : fields) EXPECT_EQ(info->at(name), value) << name;
}

TEST(Meminfo, ProcFormat) {
  expect_fields(
      "MemTotal:       24567890 kB\nMemFree:  100 kB\nHugePages_Free:        3\n"
      "Hugepagesize:       2048 kB\n",
      "meminfo",
      {{"MemTotal", 24567890ull * 1024}, {"MemFree", 102400u}, {"HugePages_Free", 3u},
       {"Hugepagesize", 2u * 1024 * 1024}});
}

TEST(Meminfo, NodeFormatAndParenthesisedNames) {
  expect_fields(
      "Node 12 MemTotal:        5335244 kB\nNode 12 Active(anon):       1520 kB\n"
      "Node 12 HugePages_Total:     0\n",
      "node12/meminfo", {{"MemTotal", 5335244ull * 1024}, {"Active(anon)", 1520u * 1024}, {"HugePages_Total", 0u}});
}

TEST(Meminfo, RealProcMeminfoParses) {
  auto info = read_meminfo(SysfsRoot("/"), "/proc/meminfo");
  ASSERT_TRUE(info.has_value()) << info.error().message;
  auto total = meminfo_field(*info, "MemTotal", "/proc/meminfo");
  ASSERT_TRUE(total.has_value());
  EXPECT_GT(*total, 0u);
}

TEST(Meminfo, ErrorsNameFileAndLine) {
  auto bad_value = parse_meminfo("MemTotal: 1 kB\nMemFree: many kB\n", "/x/meminfo");
  ASSERT_FALSE(bad_value.has_value());
  EXPECT_EQ(bad_value.error().code, EINVAL);
  EXPECT_NE(bad_value.error().message.find("/x/meminfo:2"), std::string::npos)
      << bad_value.error().message;

  EXPECT_FALSE(parse_meminfo("MemTotal 1 kB\n", "f").has_value());
  EXPECT_FALSE(parse_meminfo("MemTotal: 1 MB\n", "f").has_value());
  EXPECT_FALSE(parse_meminfo(": 1 kB\n", "f").has_value());
  EXPECT_FALSE(parse_meminfo("MemTotal: 99999999999999999999 kB\n", "f").has_value());
  EXPECT_FALSE(parse_meminfo("MemTotal: 18014398509481984 kB\n", "f").has_value());
}

TEST(Meminfo, MissingField) {
  auto info = parse_meminfo("MemTotal: 1 kB\n", "some/file");
  ASSERT_TRUE(info.has_value());
  auto free = meminfo_field(*info, "MemFree", "some/file");
  ASSERT_FALSE(free.has_value());
  EXPECT_NE(free.error().message.find("some/file"), std::string::npos);
  EXPECT_NE(free.error().message.find("MemFree"), std::string::npos);
}

TEST(Meminfo, UnreadableFile) {
  auto info = read_meminfo(SysfsRoot("/nonexistent-root"), "/proc/meminfo");
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code, ENOENT);
  EXPECT_NE(info.error().message.find("/nonexistent-root/proc/meminfo"), std::string::npos);
}


// A node whose page cache filled its memory still has that cache to give:
// free plus all inactive file pages and half of the active ones and of the
// reclaimable slab; /proc/meminfo's own MemAvailable wins where present.
TEST(Meminfo, AvailableCountsReclaimablePageCache) {
  auto node = parse_meminfo(
      "Node 0 MemFree: 100 kB\nNode 0 Inactive(file): 1000 kB\nNode 0 Active(file): 400 kB\n"
      "Node 0 SReclaimable: 60 kB\nNode 0 Active(anon): 5000 kB\n",
      "node0/meminfo");
  ASSERT_TRUE(node) << node.error().message;
  auto available = meminfo_available(*node, "node0/meminfo");
  ASSERT_TRUE(available) << available.error().message;
  EXPECT_EQ(*available, (100u + 1000u + 200u + 30u) * 1024);

  auto proc = parse_meminfo("MemFree: 100 kB\nMemAvailable: 9000 kB\nInactive(file): 1000 kB\n",
                            "/proc/meminfo");
  ASSERT_TRUE(proc);
  EXPECT_EQ(*meminfo_available(*proc, "/proc/meminfo"), 9000u * 1024);

  auto bare = parse_meminfo("MemFree: 7 kB\n", "m");
  ASSERT_TRUE(bare);
  EXPECT_EQ(*meminfo_available(*bare, "m"), 7u * 1024);
  auto none = parse_meminfo("MemTotal: 7 kB\n", "m");
  ASSERT_TRUE(none);
  EXPECT_FALSE(meminfo_available(*none, "m"));
}
}  // namespace
}  // namespace cxlpool::hal
