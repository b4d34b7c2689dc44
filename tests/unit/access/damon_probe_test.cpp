// SPDX-License-Identifier: Apache-2.0
// probe_damon on fixture trees, and on this host read-only.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>

#include "damon_probe.hpp"
#include "support/damon_tree.hpp"

namespace cxlpool::drivers {
namespace {

using hal::BackendState;
using testing::DamonTree;

TEST(DamonProbe, AvailableWithPaddr) {
  DamonTree tree("damon-running");
  const auto before = tree.snapshot();
  const auto r = probe_damon_at(tree.sysfs_root());
  EXPECT_EQ(r.cls, "AccessSource");
  EXPECT_EQ(r.name, "damon");
  EXPECT_EQ(r.state, BackendState::kAvailable) << r.detail;
  EXPECT_NE(r.detail.find("paddr"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("1 running"), std::string::npos) << r.detail;
  EXPECT_EQ(tree.snapshot(), before) << "the probe must not write";
}

TEST(DamonProbe, NotPresentWithoutPaddr) {
  DamonTree tree("damon-no-paddr");
  const auto before = tree.snapshot();
  const auto r = probe_damon_at(tree.sysfs_root());
  EXPECT_EQ(r.state, BackendState::kNotPresent) << r.detail;
  EXPECT_NE(r.detail.find("avail_operations is 'vaddr fvaddr'"), std::string::npos) << r.detail;
  EXPECT_EQ(tree.snapshot(), before) << "the probe must not write";
}

TEST(DamonProbe, NotPresentWithoutAnyContext) {
  DamonTree tree("damon-fresh");
  tree.remove("kdamonds/0");
  const auto r = probe_damon_at(tree.sysfs_root());
  EXPECT_EQ(r.state, BackendState::kNotPresent) << r.detail;
  EXPECT_NE(r.detail.find("no DAMON context"), std::string::npos) << r.detail;
}

TEST(DamonProbe, NotPresentWithoutInterface) {
  DamonTree tree("damon-fresh");
  std::filesystem::remove_all(tree.admin());
  const auto r = probe_damon_at(tree.sysfs_root());
  EXPECT_EQ(r.state, BackendState::kNotPresent) << r.detail;
  EXPECT_NE(r.detail.find("5.18"), std::string::npos) << r.detail;
}

TEST(DamonProbe, NotPresentWhenNotWritable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes any file: cannot build an unwritable tree";
  DamonTree tree("damon-running");
  std::filesystem::permissions(tree.admin() / "kdamonds/nr_kdamonds", std::filesystem::perms::owner_read);
  const auto r = probe_damon_at(tree.sysfs_root());
  EXPECT_EQ(r.state, BackendState::kNotPresent) << r.detail;
  EXPECT_NE(r.detail.find("CAP_SYS_ADMIN"), std::string::npos) << r.detail;
}

TEST(DamonProbe, MalformedCountIsReported) {
  DamonTree tree("damon-running");
  tree.write("kdamonds/nr_kdamonds", "two");
  const auto r = probe_damon_at(tree.sysfs_root());
  EXPECT_EQ(r.state, BackendState::kNotPresent);
  EXPECT_NE(r.detail.find("two"), std::string::npos) << r.detail;
}

// The probe only reads, so it may look at this host's real DAMON tree.
TEST(DamonProbe, HostReportIsWellFormed) {
  const auto r = probe_damon();
  EXPECT_EQ(r.cls, "AccessSource");
  EXPECT_EQ(r.name, "damon");
  EXPECT_TRUE(r.state == BackendState::kAvailable || r.state == BackendState::kNotPresent);
  EXPECT_FALSE(r.detail.empty());
  EXPECT_EQ(r.detail.find('\n'), std::string::npos) << r.detail;
  std::cout << "  AccessSource/damon: " << hal::backend_state_name(r.state) << " (" << r.detail << ")\n";
}

}  // namespace
}  // namespace cxlpool::drivers
