// SPDX-License-Identifier: Apache-2.0
#include "damon_ranges.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "cxlpool/common/sysfs_root.hpp"

namespace cxlpool::drivers {
namespace {

// block_size_bytes and phys_index are printed in hex without "0x".
Result<uint64_t> read_hex(const SysfsRoot& sys, const std::string& rel) {
  auto text = sys.read_string(rel);
  if (!text) return tl::unexpected(text.error());
  uint64_t v = 0;
  const char* b = text->data();
  const char* e = b + text->size();
  auto [p, ec] = std::from_chars(b, e, v, 16);
  if (b == e || ec != std::errc() || p != e) {
    return fail(EINVAL, sys.resolve(rel).string() + ": not a hex number: '" + text->substr(0, 32) + "'");
  }
  return v;
}

}  // namespace

Result<std::vector<std::pair<uint64_t, uint64_t>>> node_physical_ranges(const std::string& sysfs_root,
                                                                        int node) {
  const SysfsRoot sys(sysfs_root);
  const std::string node_dir = "/devices/system/node/node" + std::to_string(node);
  if (node < 0 || !sys.exists(node_dir)) return fail(ENOENT, "no NUMA node " + std::to_string(node));
  auto block = read_hex(sys, "/devices/system/memory/block_size_bytes");
  if (!block) return tl::unexpected(block.error());
  if (*block == 0 || (*block & (*block - 1)) != 0) {
    return fail(EINVAL, "memory block size " + std::to_string(*block) + " is not a power of two");
  }

  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  for (const auto& name : sys.list(node_dir, "memory")) {
    const std::string id = name.substr(6);
    if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;  // memory_failure/, memory_side_cache/ and the like
    }
    const std::string dir = "/devices/system/memory/" + name;
    auto state = sys.read_string(dir + "/state");
    if (!state) return tl::unexpected(state.error());
    if (*state != "online") continue;
    auto index = read_hex(sys, dir + "/phys_index");
    if (!index) return tl::unexpected(index.error());
    if (*index >= std::numeric_limits<uint64_t>::max() / *block) {
      return fail(EINVAL, sys.resolve(dir).string() + ": phys_index out of range");
    }
    blocks.emplace_back(*index * *block, (*index + 1) * *block);
  }
  if (blocks.empty()) return fail(ENOENT, "NUMA node " + std::to_string(node) + " has no online memory blocks");
  std::sort(blocks.begin(), blocks.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& b : blocks) {
    if (!merged.empty() && merged.back().second >= b.first) {
      merged.back().second = std::max(merged.back().second, b.second);
    } else {
      merged.push_back(b);
    }
  }
  return merged;
}

}  // namespace cxlpool::drivers
