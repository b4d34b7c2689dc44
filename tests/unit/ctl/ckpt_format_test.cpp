// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl ckpt` output: the list's columns and JSON keys, sorted by
// name, and the restore summary.
#include <gtest/gtest.h>

#include "ckpt_format.hpp"

namespace cxlpool::ctl {
namespace {

proto::CkptEntry entry(const std::string& name) {
  return proto::CkptEntry{.region_id = 7,
                          .image_bytes = 3ull << 20,
                          .created_unix_ns = 1'700'000'000'000'000'000ull,
                          .capture_ns = 12'500'000,
                          .tier_id = 1,
                          .owner_uid = 1000,
                          .pid = 4242,
                          .threads = 4,
                          .restores = 2,
                          .name = name};
}

TEST(CkptFormat, ListIsSortedWithEveryColumn) {
  const proto::CkptListReply reply{{entry("zeta"), entry("alpha")}};
  const auto j = ckpt_list_json(reply);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["name"], "alpha");
  for (const char* key : {"region", "tier", "bytes", "owner_uid", "pid", "threads", "created_unix_ns", "capture_ns",
                          "restores"}) {
    EXPECT_TRUE(j[0].contains(key)) << key;
  }
  const std::string text = ckpt_list_text(reply);
  EXPECT_LT(text.find("alpha"), text.find("zeta"));
  EXPECT_NE(text.find("2023-11-14T22:13:20Z"), std::string::npos) << text;
  EXPECT_NE(text.find("12.5 ms"), std::string::npos) << text;
  EXPECT_EQ(ckpt_list_text({}), "no checkpoints\n");
}

TEST(CkptFormat, RestoreNamesEachClone) {
  const proto::CkptRestoreReply reply{3'000'000, {proto::CkptClone{.pid = 900, .keeper = 899, .ns_pid = 42}}};
  const std::string text = ckpt_restore_text("w", reply);
  EXPECT_NE(text.find("restored 1 clone(s) of 'w' in 3.0 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("pid 900 (pid 42 in its namespace, keeper 899)"), std::string::npos) << text;
  EXPECT_EQ(ckpt_restore_json(reply)["clones"][0]["keeper"], 899);
}

}  // namespace
}  // namespace cxlpool::ctl
