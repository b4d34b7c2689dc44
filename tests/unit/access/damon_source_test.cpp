// SPDX-License-Identifier: Apache-2.0
// The DAMON adapter against private copies of fixture trees. The tests play
// the kernel's part: they fill tried_regions/ the way DAMON does after
// "update_schemes_tried_regions", and reset state/ to what the kernel shows.
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <limits>

#include "damon_source.hpp"
#include "support/damon_tree.hpp"

namespace cxlpool::drivers {
namespace {

using hal::AddressSpace;
using hal::PageAccess;
using testing::DamonTree;
using testing::TriedRegion;

constexpr uint64_t kGiB = 1ULL << 30;
constexpr uint64_t kMiB = 1ULL << 20;
const std::string kCtx = "kdamonds/0/contexts/0";
const std::string kScheme = kCtx + "/schemes/0";

DamonSourceConfig own_config(const DamonTree& tree) {
  DamonSourceConfig c;
  c.sysfs_root = tree.sysfs_root();
  // Unsorted on purpose: DAMON wants its regions in address order.
  c.ranges = {{4 * kGiB, 6 * kGiB}, {0, 2 * kGiB}};
  c.sample_us = 2'000;
  c.aggr_us = 40'000;
  c.update_us = 500'000;
  c.min_regions = 16;
  c.max_regions = 512;
  return c;
}

// The kernel keeps showing "on" after a command is written to state.
void kernel_acknowledges_command(const DamonTree& tree) {
  ASSERT_EQ(tree.read("kdamonds/0/state"), "update_schemes_tried_regions");
  tree.write("kdamonds/0/state", "on");
}

TEST(DamonSource, SetUpWritesTheKernelFiles) {
  DamonTree tree("damon-fresh");
  auto source = make_damon_source(own_config(tree));
  ASSERT_TRUE(source) << source.error().message;
  EXPECT_EQ((*source)->name(), "damon");
  EXPECT_EQ(tree.read("kdamonds/nr_kdamonds"), "1");
  EXPECT_EQ(tree.read("kdamonds/0/contexts/nr_contexts"), "1");
  EXPECT_EQ(tree.read(kCtx + "/operations"), "paddr");
  EXPECT_EQ(tree.read(kCtx + "/monitoring_attrs/intervals/sample_us"), "2000");
  EXPECT_EQ(tree.read(kCtx + "/monitoring_attrs/intervals/aggr_us"), "40000");
  EXPECT_EQ(tree.read(kCtx + "/monitoring_attrs/intervals/update_us"), "500000");
  EXPECT_EQ(tree.read(kCtx + "/monitoring_attrs/nr_regions/min"), "16");
  EXPECT_EQ(tree.read(kCtx + "/monitoring_attrs/nr_regions/max"), "512");
  EXPECT_EQ(tree.read(kCtx + "/targets/nr_targets"), "1");
  EXPECT_EQ(tree.read(kCtx + "/targets/0/regions/nr_regions"), "2");
  EXPECT_EQ(tree.read(kCtx + "/targets/0/regions/0/start"), "0");
  EXPECT_EQ(tree.read(kCtx + "/targets/0/regions/0/end"), std::to_string(2 * kGiB));
  EXPECT_EQ(tree.read(kCtx + "/targets/0/regions/1/start"), std::to_string(4 * kGiB));
  EXPECT_EQ(tree.read(kCtx + "/targets/0/regions/1/end"), std::to_string(6 * kGiB));
  EXPECT_EQ(tree.read(kCtx + "/schemes/nr_schemes"), "1");
  EXPECT_EQ(tree.read(kScheme + "/action"), "stat");
  EXPECT_EQ(tree.read(kScheme + "/access_pattern/sz/min"), "0");
  EXPECT_EQ(tree.read(kScheme + "/access_pattern/sz/max"), "18446744073709551615");
  EXPECT_EQ(tree.read(kScheme + "/access_pattern/nr_accesses/min"), "0");
  EXPECT_EQ(tree.read(kScheme + "/access_pattern/nr_accesses/max"), "4294967295");
  EXPECT_EQ(tree.read(kScheme + "/access_pattern/age/min"), "0");
  EXPECT_EQ(tree.read(kScheme + "/access_pattern/age/max"), "4294967295");
  EXPECT_EQ(tree.read("kdamonds/0/state"), "on");
}

TEST(DamonSource, CollectReportsTriedRegions) {
  DamonTree tree("damon-fresh");
  auto source = make_damon_source(own_config(tree));
  ASSERT_TRUE(source) << source.error().message;

  tree.set_tried_regions(kScheme, {{0, 2 * kMiB, 12}, {2 * kMiB, 2 * kGiB, 0}, {4 * kGiB, 4 * kGiB + 8192, 3}});
  std::vector<PageAccess> out;
  ASSERT_TRUE((*source)->collect(out));
  kernel_acknowledges_command(tree);
  // The cold region (nr_accesses 0) is not reported.
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (PageAccess{AddressSpace::kPhysical, 0, 0, 12, 0, 512}));
  EXPECT_EQ(out[1], (PageAccess{AddressSpace::kPhysical, 0, 4 * kGiB, 3, 0, 2}));
  EXPECT_EQ((*source)->accesses_total(), 12u * 512 + 3 * 2);
  EXPECT_FALSE((*source)->traits().exact_counts);
  EXPECT_FALSE((*source)->traits().word_masks);
  EXPECT_FALSE((*source)->traits().virtual_addresses);

  // The next epoch reads whatever the kernel left there now.
  tree.set_tried_regions(kScheme, {{kGiB, kGiB + 4096, 7}});
  out.clear();
  ASSERT_TRUE((*source)->collect(out));
  kernel_acknowledges_command(tree);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (PageAccess{AddressSpace::kPhysical, 0, kGiB, 7, 0, 1}));
}

TEST(DamonSource, DestructionTurnsTheKdamondOffAndReleasesIt) {
  DamonTree tree("damon-fresh");
  {
    auto source = make_damon_source(own_config(tree));
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(tree.read("kdamonds/0/state"), "on");
  }
  EXPECT_EQ(tree.read("kdamonds/0/state"), "off");
  EXPECT_EQ(tree.read("kdamonds/nr_kdamonds"), "0");
}

TEST(DamonSource, FailedSetUpReleasesWhatItCreated) {
  DamonTree tree("damon-fresh");
  // The kernel "did not create" the second region directory.
  tree.remove(kCtx + "/targets/0/regions/1");
  auto source = make_damon_source(own_config(tree));
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error().code, ENOENT);
  EXPECT_NE(source.error().message.find("regions/1"), std::string::npos) << source.error().message;
  EXPECT_EQ(tree.read("kdamonds/nr_kdamonds"), "0");
  EXPECT_EQ(tree.read("kdamonds/0/state"), "off");
}

TEST(DamonSource, RefusesWithoutPaddr) {
  DamonTree tree("damon-fresh");
  tree.write(kCtx + "/avail_operations", "vaddr\nfvaddr");
  auto source = make_damon_source(own_config(tree));
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error().code, ENOTSUP);
  EXPECT_NE(source.error().message.find("paddr"), std::string::npos);
  EXPECT_EQ(tree.read(kCtx + "/operations"), "vaddr");
  EXPECT_EQ(tree.read("kdamonds/nr_kdamonds"), "0");
}

TEST(DamonSource, OwnModeLeavesExistingKdamondsAlone) {
  DamonTree tree("damon-running");
  const auto before = tree.snapshot();
  auto source = make_damon_source(own_config(tree));
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error().code, EBUSY);
  EXPECT_EQ(tree.snapshot(), before);
}

TEST(DamonSource, MissingInterface) {
  DamonTree tree("damon-fresh");
  tree.remove("kdamonds");
  auto source = make_damon_source(own_config(tree));
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error().code, ENOENT);
  EXPECT_NE(source.error().message.find("5.18"), std::string::npos);
}

TEST(DamonSource, RejectsBadConfiguration) {
  DamonTree tree("damon-fresh");
  const auto expect_einval = [&](DamonSourceConfig c, const char* what) {
    auto source = make_damon_source(c);
    ASSERT_FALSE(source) << what;
    EXPECT_EQ(source.error().code, EINVAL) << what;
  };
  const DamonSourceConfig good = own_config(tree);
  auto c = good;
  c.ranges.clear();
  expect_einval(c, "no ranges");
  c = good;
  c.ranges = {{8192, 8192}};
  expect_einval(c, "empty range");
  c.ranges = {{8192, 4096}};
  expect_einval(c, "reversed range");
  c.ranges = {{100, 8192}};
  expect_einval(c, "unaligned range");
  c.ranges = {{0, 2 * kGiB}, {kGiB, 3 * kGiB}};
  expect_einval(c, "overlapping ranges");
  c = good;
  c.min_regions = 2;
  expect_einval(c, "min_regions < 3");
  c = good;
  c.max_regions = c.min_regions - 1;
  expect_einval(c, "max < min");
  c = good;
  c.sample_us = 0;
  expect_einval(c, "sample_us 0");
  c = good;
  c.aggr_us = c.sample_us - 1;
  expect_einval(c, "aggr < sample");
  // Nothing was written for any of them.
  EXPECT_EQ(tree.read("kdamonds/nr_kdamonds"), "0");
}

DamonSourceConfig attach_config(const DamonTree& tree) {
  DamonSourceConfig c;
  c.sysfs_root = tree.sysfs_root();
  c.attach = true;
  return c;
}

TEST(DamonSource, AttachOnlyWritesTheUpdateCommand) {
  DamonTree tree("damon-running");
  const auto before = tree.snapshot();
  {
    auto source = make_damon_source(attach_config(tree));
    ASSERT_TRUE(source) << source.error().message;
    std::vector<PageAccess> out;
    ASSERT_TRUE((*source)->collect(out)) << "collect";
    // 1 GiB + [0, 1 MiB) seen 20 times, [1 MiB, 5 MiB) cold, [5 MiB, 1 GiB) 7 times.
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0], (PageAccess{AddressSpace::kPhysical, 0, kGiB, 20, 0, 256}));
    EXPECT_EQ(out[1], (PageAccess{AddressSpace::kPhysical, 0, kGiB + 5 * kMiB, 7, 0, (kGiB - 5 * kMiB) / 4096}));
    auto after = tree.snapshot();
    EXPECT_EQ(after["kdamonds/0/state"], "update_schemes_tried_regions");
    after["kdamonds/0/state"] = before.at("kdamonds/0/state");
    EXPECT_EQ(after, before);
    kernel_acknowledges_command(tree);
  }
  // Destruction leaves someone else's kdamond running.
  EXPECT_EQ(tree.read("kdamonds/0/state"), "on");
  EXPECT_EQ(tree.read("kdamonds/nr_kdamonds"), "1");
}

TEST(DamonSource, AttachHonoursAddrUnit) {
  DamonTree tree("damon-running");
  tree.write(kCtx + "/addr_unit", "4");
  auto source = make_damon_source(attach_config(tree));
  ASSERT_TRUE(source) << source.error().message;
  tree.set_tried_regions(kScheme, {{1024, 2048, 9}});
  std::vector<PageAccess> out;
  ASSERT_TRUE((*source)->collect(out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (PageAccess{AddressSpace::kPhysical, 0, 4096, 9, 0, 1}));
}

TEST(DamonSource, AttachRejectsWhatItCannotRead) {
  struct Case {
    const char* what;
    std::function<void(const DamonTree&, DamonSourceConfig&)> damage;
    int code;                  // 0: any
    const char* message_part;  // "": any
  };
  const Case cases[] = {
      {"kdamond off", [](const DamonTree& t, DamonSourceConfig&) { t.write("kdamonds/0/state", "off"); }, ESRCH, ""},
      {"vaddr operations", [](const DamonTree& t, DamonSourceConfig&) { t.write(kCtx + "/operations", "vaddr"); },
       ENOTSUP, ""},
      {"no such kdamond", [](const DamonTree&, DamonSourceConfig& c) { c.kdamond_index = 3; }, ENOENT, ""},
      {"no such scheme", [](const DamonTree&, DamonSourceConfig& c) { c.scheme_index = 1; }, ENOENT, ""},
      {"no tried_regions", [](const DamonTree& t, DamonSourceConfig&) { t.remove(kScheme + "/tried_regions"); }, 0,
       "6.2"},
      {"garbage nr_kdamonds", [](const DamonTree& t, DamonSourceConfig&) { t.write("kdamonds/nr_kdamonds", "one"); },
       EINVAL, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    DamonTree tree("damon-running");
    auto config = attach_config(tree);
    c.damage(tree, config);
    auto source = make_damon_source(config);
    ASSERT_FALSE(source);
    if (c.code != 0) {
      EXPECT_EQ(source.error().code, c.code);
    }
    EXPECT_NE(source.error().message.find(c.message_part), std::string::npos) << source.error().message;
  }
}

TEST(DamonSource, CollectStopsWhenTheKdamondStopped) {
  DamonTree tree("damon-running");
  auto source = make_damon_source(attach_config(tree));
  ASSERT_TRUE(source);
  tree.write("kdamonds/0/state", "off");
  std::vector<PageAccess> out;
  auto r = (*source)->collect(out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ESRCH);
  EXPECT_EQ(tree.read("kdamonds/0/state"), "off") << "no command written to a stopped kdamond";
}

TEST(DamonSource, GarbageFixtureIsRejected) {
  DamonTree tree("damon-garbage");
  auto source = make_damon_source(attach_config(tree));
  ASSERT_TRUE(source) << source.error().message;
  std::vector<PageAccess> out;
  auto r = (*source)->collect(out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("lots"), std::string::npos) << r.error().message;
  EXPECT_TRUE(out.empty()) << "a malformed epoch adds nothing";
  EXPECT_EQ((*source)->accesses_total(), 0u);
}

TEST(DamonSource, MalformedTriedRegionsAreRejected) {
  struct Case {
    const char* file;
    const char* value;
    int code;
  };
  const Case cases[] = {
      {"start", "", EINVAL},
      {"start", "-4096", EINVAL},
      {"start", "0x1000", EINVAL},
      {"end", "99999999999999999999999", ERANGE},
      {"end", "4096", EINVAL},  // start (1 GiB) >= end
      {"nr_accesses", "3.5", EINVAL},
      {"nr_accesses", "4294967296", ERANGE},
      {"nr_accesses", "<missing>", ENOENT},
  };
  for (const auto& c : cases) {
    DamonTree tree("damon-running");
    auto source = make_damon_source(attach_config(tree));
    ASSERT_TRUE(source);
    const std::string file = kScheme + "/tried_regions/0/" + c.file;
    if (std::string(c.value) == "<missing>") {
      tree.remove(file);
    } else {
      tree.write(file, c.value);
    }
    std::vector<PageAccess> out;
    auto r = (*source)->collect(out);
    ASSERT_FALSE(r) << c.file << "=" << c.value;
    EXPECT_EQ(r.error().code, c.code) << c.file << "=" << c.value << ": " << r.error().message;
    EXPECT_TRUE(out.empty());
  }
}

}  // namespace
}  // namespace cxlpool::drivers
