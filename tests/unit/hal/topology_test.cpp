// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/topology.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>

#include "cxlpool/common/units.hpp"
#include "support/sysfs_fixture.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::hal {
namespace {

using test::sysfs_fixture;
using test::TempDir;

constexpr const char* kNode = "/sys/devices/system/node";

Topology discover_ok(const std::filesystem::path& root) {
  auto topology = discover_topology(SysfsRoot(root));
  EXPECT_TRUE(topology.has_value()) << (topology ? "" : topology.error().message);
  return topology ? *topology : Topology{};
}

// The error must say which file was wrong: that is what an operator needs.
void expect_error_naming(const TempDir& tree, const std::string& relative, int code) {
  auto topology = discover_topology(SysfsRoot(tree.path()));
  ASSERT_FALSE(topology.has_value()) << "discovery accepted a broken " << relative;
  EXPECT_EQ(topology.error().code, code) << topology.error().message;
  EXPECT_NE(topology.error().message.find(tree.resolve(relative).string()), std::string::npos)
      << "message does not name " << relative << ": " << topology.error().message;
}

TEST(Topology, OneNode) {
  const Topology t = discover_ok(sysfs_fixture("one-node"));
  EXPECT_TRUE(t.numa_present);
  ASSERT_EQ(t.nodes.size(), 1u);
  const NumaNode& n = t.nodes[0];
  EXPECT_EQ(n.id, 0);
  EXPECT_EQ(n.cpus, (std::vector<int>{0, 1}));
  EXPECT_FALSE(n.cpu_less());
  EXPECT_EQ(n.total_bytes, 24 * kGiB);
  EXPECT_EQ(n.free_bytes, 20 * kGiB);
  EXPECT_EQ(n.distances, (std::vector<int>{10}));
  EXPECT_EQ(n.memory_tier, -1);
  EXPECT_TRUE(t.memory_tiers.empty());
}

TEST(Topology, TwoSocketsAndCpuLessNode) {
  const Topology t = discover_ok(sysfs_fixture("two-socket-cxl"));
  EXPECT_TRUE(t.numa_present);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.nodes[0].id, 0);
  EXPECT_EQ(t.nodes[1].id, 1);
  EXPECT_EQ(t.nodes[2].id, 2);
  EXPECT_EQ(t.nodes[0].cpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.nodes[1].cpus.size(), 8u);
  EXPECT_EQ(t.nodes[1].cpus.front(), 8);
  EXPECT_EQ(t.nodes[1].cpus.back(), 15);
  EXPECT_FALSE(t.nodes[0].cpu_less());
  EXPECT_FALSE(t.nodes[1].cpu_less());
  EXPECT_TRUE(t.nodes[2].cpu_less());
  EXPECT_EQ(t.nodes[0].total_bytes, 32 * kGiB);
  EXPECT_EQ(t.nodes[2].total_bytes, 64 * kGiB);
  EXPECT_EQ(t.nodes[2].free_bytes, 67000000ull * 1024);
  EXPECT_EQ(t.nodes[0].distances, (std::vector<int>{10, 21, 24}));
  EXPECT_EQ(t.nodes[1].distances, (std::vector<int>{21, 10, 24}));
  EXPECT_EQ(t.nodes[2].distances, (std::vector<int>{24, 24, 10}));
  for (const auto& n : t.nodes) EXPECT_EQ(n.memory_tier, -1);
}

TEST(Topology, KernelMemoryTiers) {
  const Topology t = discover_ok(sysfs_fixture("memory-tiers"));
  ASSERT_EQ(t.memory_tiers.size(), 2u);
  // Numeric order, not the directory's lexical order (memory_tier22 < memory_tier4).
  EXPECT_EQ(t.memory_tiers[0].id, 4);
  EXPECT_EQ(t.memory_tiers[0].nodes, (std::vector<int>{0}));
  EXPECT_EQ(t.memory_tiers[1].id, 22);
  EXPECT_EQ(t.memory_tiers[1].nodes, (std::vector<int>{1}));
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].memory_tier, 4);
  EXPECT_FALSE(t.nodes[0].cpu_less());
  EXPECT_EQ(t.nodes[1].memory_tier, 22);
  EXPECT_TRUE(t.nodes[1].cpu_less());
  EXPECT_EQ(t.nodes[1].total_bytes, 8 * kGiB);
  EXPECT_EQ(t.nodes[1].free_bytes, 8 * kGiB);
  EXPECT_EQ(t.nodes[0].distances, (std::vector<int>{10, 20}));
}

TEST(Topology, NoNumaDirectoryGivesOneSyntheticNode) {
  const Topology t = discover_ok(sysfs_fixture("no-numa"));
  EXPECT_FALSE(t.numa_present);
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].id, 0);
  EXPECT_EQ(t.nodes[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.nodes[0].total_bytes, 8 * kGiB);
  EXPECT_EQ(t.nodes[0].free_bytes, 7 * kGiB);  // MemAvailable, not MemFree
  EXPECT_EQ(t.nodes[0].distances, (std::vector<int>{10}));
}

TEST(Topology, NoNumaFallsBackToCpuinfo) {
  auto tree = TempDir::copy_of(sysfs_fixture("no-numa"));
  tree.remove("/sys/devices/system/cpu/online");
  tree.write("/proc/cpuinfo", "processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\nmodel name\t: x\n");
  const Topology t = discover_ok(tree.path());
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].cpus, (std::vector<int>{0, 1}));
}

TEST(Topology, NodesWithoutMemoryAreSkippedAndDistancesRealigned) {
  // Node 1 has CPUs but no memory: it is online, so it has a distance column,
  // but it is not a memory node.
  TempDir tree;
  tree.write(std::string(kNode) + "/has_memory", "0,2\n");
  tree.write(std::string(kNode) + "/online", "0-2\n");
  tree.write(std::string(kNode) + "/node0/cpulist", "0-1\n");
  tree.write(std::string(kNode) + "/node0/distance", "10 11 30\n");
  tree.write(std::string(kNode) + "/node0/meminfo", "Node 0 MemTotal: 1024 kB\nNode 0 MemFree: 512 kB\n");
  tree.write(std::string(kNode) + "/node1/cpulist", "2-3\n");
  tree.write(std::string(kNode) + "/node1/distance", "11 10 30\n");
  tree.write(std::string(kNode) + "/node1/meminfo", "Node 1 MemTotal: 0 kB\nNode 1 MemFree: 0 kB\n");
  tree.write(std::string(kNode) + "/node2/cpulist", "\n");
  tree.write(std::string(kNode) + "/node2/distance", "30 30 10\n");
  tree.write(std::string(kNode) + "/node2/meminfo", "Node 2 MemTotal: 2048 kB\nNode 2 MemFree: 2048 kB\n");
  const Topology t = discover_ok(tree.path());
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].id, 0);
  EXPECT_EQ(t.nodes[1].id, 2);
  EXPECT_EQ(t.nodes[0].distances, (std::vector<int>{10, 30}));
  EXPECT_EQ(t.nodes[1].distances, (std::vector<int>{30, 10}));
  EXPECT_EQ(t.nodes[1].total_bytes, 2048u * 1024);
}

TEST(Topology, WithoutHasMemoryEveryNodeDirCounts) {
  auto tree = TempDir::copy_of(sysfs_fixture("two-socket-cxl"));
  tree.remove(std::string(kNode) + "/has_memory");
  tree.remove(std::string(kNode) + "/online");
  const Topology t = discover_ok(tree.path());
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.nodes[2].distances, (std::vector<int>{24, 24, 10}));
}

TEST(Topology, RealHost) {
  const SysfsRoot host("/");
  auto t = discover_topology(host);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_GE(t->nodes.size(), 1u);
  for (size_t i = 0; i < t->nodes.size(); ++i) {
    const NumaNode& n = t->nodes[i];
    EXPECT_GT(n.total_bytes, 0u) << "node " << n.id;
    EXPECT_LE(n.free_bytes, n.total_bytes) << "node " << n.id;
    ASSERT_EQ(n.distances.size(), t->nodes.size());
    EXPECT_EQ(n.distances[i], 10) << "node " << n.id;
  }
  if (host.exists(std::string(kNode) + "/has_memory")) {
    auto listed = parse_id_list(*host.read_string(std::string(kNode) + "/has_memory"));
    ASSERT_TRUE(listed.has_value());
    EXPECT_EQ(listed->size(), t->nodes.size());
  }
  // At least one node runs this process, so not every node is CPU-less.
  bool any_cpu = false;
  for (const auto& n : t->nodes) any_cpu |= !n.cpu_less();
  EXPECT_TRUE(any_cpu);
  EXPECT_TRUE(refresh_free_memory(host, *t).has_value());
}

TEST(Topology, RefreshFreeMemoryRereadsMemFree) {
  auto tree = TempDir::copy_of(sysfs_fixture("memory-tiers"));
  auto t = discover_topology(SysfsRoot(tree.path()));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  tree.write(std::string(kNode) + "/node1/meminfo",
             "Node 1 MemTotal:  8388608 kB\nNode 1 MemFree:  1048576 kB\n");
  ASSERT_TRUE(refresh_free_memory(SysfsRoot(tree.path()), *t).has_value());
  EXPECT_EQ(t->nodes[1].free_bytes, 1 * kGiB);
  EXPECT_EQ(t->nodes[1].total_bytes, 8 * kGiB);
  EXPECT_EQ(t->nodes[0].free_bytes, 12 * kGiB);
}

TEST(Topology, RefreshFailureLeavesTopologyUntouched) {
  auto tree = TempDir::copy_of(sysfs_fixture("memory-tiers"));
  auto t = discover_topology(SysfsRoot(tree.path()));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  tree.write(std::string(kNode) + "/node0/meminfo", "Node 0 MemTotal:  1 kB\nNode 0 MemFree:  0 kB\n");
  tree.write(std::string(kNode) + "/node1/meminfo", "Node 1 MemTotal:  8388608 kB\n");
  auto r = refresh_free_memory(SysfsRoot(tree.path()), *t);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("node1/meminfo"), std::string::npos) << r.error().message;
  EXPECT_EQ(t->nodes[0].free_bytes, 12 * kGiB);
}

TEST(Topology, RefreshWithoutNuma) {
  auto tree = TempDir::copy_of(sysfs_fixture("no-numa"));
  auto t = discover_topology(SysfsRoot(tree.path()));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  tree.write("/proc/meminfo", "MemTotal:  8388608 kB\nMemFree:  4096 kB\n");
  ASSERT_TRUE(refresh_free_memory(SysfsRoot(tree.path()), *t).has_value());
  EXPECT_EQ(t->nodes[0].free_bytes, 4096u * 1024);
}

// One broken file per case, on top of a fixture that otherwise discovers.
struct Breakage {
  const char* name;
  const char* fixture;
  std::string file;                     // relative to the tree's root
  std::optional<std::string> contents;  // nullopt: the file is removed
  int code;
  std::string named = {};  // the file the error must name, when it is not `file`
};

// What gtest prints for a case: the file it breaks.
void PrintTo(const Breakage& b, std::ostream* os) { *os << b.file; }

const std::string kNodeDir = kNode;

const Breakage kBreakages[] = {
    {"CpuList", "two-socket-cxl", kNodeDir + "/node1/cpulist", "8-x\n", EINVAL},
    {"MissingCpuList", "one-node", kNodeDir + "/node0/cpulist", std::nullopt, ENOENT},
    {"MeminfoValue", "one-node", kNodeDir + "/node0/meminfo",
     "Node 0 MemTotal:       lots kB\nNode 0 MemFree:  1 kB\n", EINVAL},
    {"MeminfoWithoutMemFree", "one-node", kNodeDir + "/node0/meminfo", "Node 0 MemTotal:       1024 kB\n", EINVAL},
    {"DistanceText", "two-socket-cxl", kNodeDir + "/node2/distance", "24 far 10\n", EINVAL},
    {"DistanceCount", "two-socket-cxl", kNodeDir + "/node0/distance", "10 21\n", EINVAL},
    {"HasMemory", "one-node", kNodeDir + "/has_memory", "0-\n", EINVAL},
    {"HasMemoryNamesMissingNode", "one-node", kNodeDir + "/has_memory", "0-1\n", ENOENT, kNodeDir + "/node1"},
    {"TierNodelist", "memory-tiers", "/sys/devices/virtual/memory_tiering/memory_tier22/nodelist", "one\n", EINVAL},
    {"ProcMeminfoWithoutNuma", "no-numa", "/proc/meminfo", "MemTotal 8388608 kB\n", EINVAL},
};

class TopologyMalformed : public ::testing::TestWithParam<Breakage> {};

TEST_P(TopologyMalformed, ErrorNamesTheFile) {
  const Breakage& b = GetParam();
  auto tree = TempDir::copy_of(sysfs_fixture(b.fixture));
  if (b.contents) {
    tree.write(b.file, *b.contents);
  } else {
    tree.remove(b.file);
  }
  expect_error_naming(tree, b.named.empty() ? b.file : b.named, b.code);
}

INSTANTIATE_TEST_SUITE_P(Files, TopologyMalformed, ::testing::ValuesIn(kBreakages),
                         [](const ::testing::TestParamInfo<Breakage>& info) { return info.param.name; });

}  // namespace
}  // namespace cxlpool::hal
