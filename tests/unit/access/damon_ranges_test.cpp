// SPDX-License-Identifier: Apache-2.0
// node_physical_ranges on generated memory-block trees, and read-only on
// this host.
#include <gtest/gtest.h>

#include <filesystem>

#include "damon_ranges.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::drivers {
namespace {
namespace fs = std::filesystem;

class MemoryTree {
 public:
  MemoryTree() : dir_("memblk") {
    write("devices/system/memory/block_size_bytes", "8000000");  // 128 MiB
  }
  void write(const std::string& rel, const std::string& value) const { dir_.write(rel, value + "\n"); }
  // Memory block `id` on `node`, linked from the node as the kernel does.
  void block(int node, unsigned id, const char* state) const {
    char hex[32];
    snprintf(hex, sizeof hex, "%08x", id);
    const std::string name = "memory" + std::to_string(id);
    write("devices/system/memory/" + name + "/state", state);
    write("devices/system/memory/" + name + "/phys_index", hex);
    const fs::path node_dir = dir_.resolve("devices/system/node/node" + std::to_string(node));
    fs::create_directories(node_dir);
    fs::create_directory_symlink("../../memory/" + name, node_dir / name);
  }
  std::string root() const { return dir_.path().string(); }

 private:
  test::TempDir dir_;
};

constexpr uint64_t kBlock = 128ULL << 20;

TEST(DamonRanges, MergesOnlineBlocksOfTheNode) {
  MemoryTree t;
  for (unsigned id : {0u, 1u, 2u, 8u, 9u}) t.block(0, id, "online");
  t.block(0, 3, "offline");
  for (unsigned id : {4u, 5u}) t.block(1, id, "online");
  fs::create_directories(fs::path(t.root()) / "devices/system/node/node0/memory_side_cache");
  auto r0 = node_physical_ranges(t.root(), 0);
  ASSERT_TRUE(r0) << r0.error().message;
  const std::vector<std::pair<uint64_t, uint64_t>> want0 = {{0, 3 * kBlock}, {8 * kBlock, 10 * kBlock}};
  EXPECT_EQ(*r0, want0);
  auto r1 = node_physical_ranges(t.root(), 1);
  ASSERT_TRUE(r1) << r1.error().message;
  const std::vector<std::pair<uint64_t, uint64_t>> want1 = {{4 * kBlock, 6 * kBlock}};
  EXPECT_EQ(*r1, want1);
}

TEST(DamonRanges, Errors) {
  MemoryTree t;
  t.block(0, 0, "offline");
  EXPECT_EQ(node_physical_ranges(t.root(), 0).error().code, ENOENT);  // nothing online
  EXPECT_EQ(node_physical_ranges(t.root(), 7).error().code, ENOENT);
  EXPECT_EQ(node_physical_ranges(t.root(), -1).error().code, ENOENT);
  t.block(0, 1, "online");
  t.write("devices/system/memory/memory1/phys_index", "zz");
  EXPECT_EQ(node_physical_ranges(t.root(), 0).error().code, EINVAL);
  t.write("devices/system/memory/memory1/phys_index", "1");
  t.write("devices/system/memory/block_size_bytes", "3000");
  EXPECT_EQ(node_physical_ranges(t.root(), 0).error().code, EINVAL);
}

TEST(DamonRanges, ThisHostsNodeZero) {
  if (!fs::exists("/sys/devices/system/memory/block_size_bytes")) GTEST_SKIP() << "no memory blocks in sysfs";
  auto r = node_physical_ranges("/sys", 0);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->empty());
  for (const auto& [start, end] : *r) {
    EXPECT_LT(start, end);
    EXPECT_EQ(start % 4096, 0u);
    EXPECT_EQ(end % 4096, 0u);
  }
}

}  // namespace
}  // namespace cxlpool::drivers
