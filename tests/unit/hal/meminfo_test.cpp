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

}  // namespace
}  // namespace cxlpool::hal
