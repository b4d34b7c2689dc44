// SPDX-License-Identifier: Apache-2.0
// Tiers built from the sysfs fixture trees and the config.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tier.hpp"

namespace cxlpool::daemon {
namespace {

hal::Topology fixture(const std::string& name) {
  const char* root = std::getenv("CXLPOOL_SYSFS_FIXTURES");
  EXPECT_NE(root, nullptr);
  auto topology = hal::discover_topology(SysfsRoot(std::string(root) + "/" + name));
  EXPECT_TRUE(topology) << topology.error().message;
  return *topology;
}

TEST(Tiers, TwoSocketsAndACpuLessNode) {
  Config config = embedded_default_config();
  auto tiers = build_tiers(config, fixture("two-socket-cxl"));
  ASSERT_TRUE(tiers) << tiers.error().message;
  ASSERT_EQ(tiers->size(), 4u);
  EXPECT_EQ((*tiers)[0].name, "dram0");
  EXPECT_EQ((*tiers)[0].kind, proto::TierKind::kDram);
  EXPECT_EQ((*tiers)[1].name, "dram1");
  EXPECT_EQ((*tiers)[2].name, "cxl2");
  EXPECT_EQ((*tiers)[2].kind, proto::TierKind::kCxl);
  EXPECT_EQ((*tiers)[2].numa_node, 2);
  EXPECT_GT((*tiers)[2].latency_ns, (*tiers)[0].latency_ns);  // SLIT 24 vs 10
  EXPECT_EQ((*tiers)[3].name, "emu-slow");
  EXPECT_EQ((*tiers)[3].kind, proto::TierKind::kEmulated);
  EXPECT_EQ((*tiers)[3].numa_node, 0);  // emulated tiers live on the first DRAM node
  for (size_t i = 0; i < tiers->size(); ++i) EXPECT_EQ((*tiers)[i].id, i);
}

TEST(Tiers, CapacityIsTheConfiguredShareOfTheNode) {
  Config config = embedded_default_config();
  config.numa_capacity_percent = 25;
  const auto topology = fixture("one-node");
  auto tiers = build_tiers(config, topology);
  ASSERT_TRUE(tiers);
  EXPECT_EQ((*tiers)[0].capacity, topology.nodes[0].total_bytes / 100 * 25);
  Tier& t = (*tiers)[0];
  t.used = t.capacity - 4096;
  EXPECT_EQ(tier_free_bytes(t, topology), 4096u);
}

TEST(Tiers, KernelMemoryTiersRankTheNodes) {
  const auto topology = fixture("memory-tiers");
  auto tiers = build_tiers(Config{}, topology);
  ASSERT_TRUE(tiers) << tiers.error().message;
  ASSERT_EQ(tiers->size(), 2u);
  EXPECT_EQ((*tiers)[0].kind, proto::TierKind::kDram);
  EXPECT_EQ((*tiers)[1].kind, proto::TierKind::kCxl);
  // Even if node 1 had CPUs, memory_tier22 is slower than node 0's memory_tier4.
  hal::Topology with_cpus = topology;
  with_cpus.nodes[1].cpus = {4};
  tiers = build_tiers(Config{}, with_cpus);
  ASSERT_TRUE(tiers);
  EXPECT_EQ((*tiers)[1].name, "cxl1");
}

TEST(Tiers, CxlRegionNodeBecomesACxlTier) {
  Config config;
  auto tiers = build_tiers(config, fixture("two-socket-cxl"), {1});
  ASSERT_TRUE(tiers);
  EXPECT_EQ((*tiers)[1].name, "cxl1");
  EXPECT_EQ((*tiers)[1].kind, proto::TierKind::kCxl);
}

TEST(Tiers, ExcludedNodesAndDisabledNuma) {
  Config config = embedded_default_config();
  config.numa_exclude_nodes = {1};
  auto tiers = build_tiers(config, fixture("two-socket-cxl"));
  ASSERT_TRUE(tiers);
  EXPECT_EQ(tiers->size(), 3u);
  config.numa_enabled = false;
  tiers = build_tiers(config, fixture("two-socket-cxl"));
  ASSERT_TRUE(tiers);
  ASSERT_EQ(tiers->size(), 1u);
  EXPECT_EQ((*tiers)[0].name, "emu-slow");
  config.emulated_tiers.clear();
  EXPECT_FALSE(build_tiers(config, fixture("two-socket-cxl")));
}

TEST(Tiers, EmulatedTierOnAMissingNodeIsAnError) {
  Config config = embedded_default_config();
  config.emulated_tiers[0].numa_node = 7;
  auto tiers = build_tiers(config, fixture("one-node"));
  ASSERT_FALSE(tiers);
  EXPECT_EQ(tiers.error().code, ENODEV);
  EXPECT_NE(tiers.error().message.find("node 7"), std::string::npos);
}

}  // namespace
}  // namespace cxlpool::daemon
