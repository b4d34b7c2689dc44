// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/sysfs_root.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace cxlpool {
namespace {

using test::TempDir;

TEST(ParseIdList, Forms) {
  EXPECT_EQ(*parse_id_list(""), std::vector<int>{});
  EXPECT_EQ(*parse_id_list("0"), std::vector<int>{0});
  EXPECT_EQ(*parse_id_list("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(*parse_id_list("0-1,8,10-11"), (std::vector<int>{0, 1, 8, 10, 11}));
  EXPECT_EQ(*parse_id_list("5-5"), std::vector<int>{5});
  EXPECT_EQ(*parse_id_list("1,,2"), (std::vector<int>{1, 2}));
}

TEST(ParseIdList, Rejects) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1-2-3", "1 2", "0x1", "1,b"}) {
    auto r = parse_id_list(bad);
    ASSERT_FALSE(r.has_value()) << "accepted '" << bad << "'";
    EXPECT_EQ(r.error().code, EINVAL);
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(parse_id_list("0-99999999").has_value());
}

TEST(SysfsRoot, ResolvesBelowRoot) {
  const SysfsRoot root("/tmp/fixture");
  EXPECT_EQ(root.resolve("/sys/devices/system/node"), "/tmp/fixture/sys/devices/system/node");
  EXPECT_EQ(root.resolve("proc/meminfo"), "/tmp/fixture/proc/meminfo");
  EXPECT_EQ(SysfsRoot().resolve("/proc/meminfo"), "/proc/meminfo");
}

TEST(SysfsRoot, ReadsAndLists) {
  TempDir tree;
  tree.write("/sys/a/value", "42\n");
  tree.write("/sys/a/text", "hello world\n");
  tree.write("/sys/a/bad", "4x2\n");
  tree.write("/sys/a/node1/x", "");
  tree.write("/sys/a/node0/x", "");
  const SysfsRoot root(tree.path());
  EXPECT_TRUE(root.exists("/sys/a/value"));
  EXPECT_FALSE(root.exists("/sys/a/missing"));
  EXPECT_EQ(*root.read_string("/sys/a/text"), "hello world");
  EXPECT_EQ(*root.read_int("/sys/a/value"), 42);
  auto bad = root.read_int("/sys/a/bad");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find(tree.resolve("/sys/a/bad").string()), std::string::npos);
  auto missing = root.read_string("/sys/a/missing");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ENOENT);
  EXPECT_EQ(root.list("/sys/a", "node"), (std::vector<std::string>{"node0", "node1"}));
  EXPECT_EQ(root.list("/sys/a").size(), 5u);
  EXPECT_TRUE(root.list("/sys/missing").empty());
}

}  // namespace
}  // namespace cxlpool
