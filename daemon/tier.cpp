// SPDX-License-Identifier: Apache-2.0
#include "tier.hpp"

#include <algorithm>

namespace cxlpool::daemon {
namespace {

const hal::NumaNode* find_node(const hal::Topology& topology, int id) {
  for (const auto& node : topology.nodes) {
    if (node.id == id) return &node;
  }
  return nullptr;
}

// SLIT distances are relative to 10 for local memory; a local DRAM load is
// about 90 ns on current servers, so the class scales from there. Declared
// classes in the config override this for emulated tiers.
uint32_t latency_class_from_distance(const hal::Topology& topology, const hal::NumaNode& node) {
  int best = 10;
  bool found = false;
  for (size_t i = 0; i < topology.nodes.size(); ++i) {
    if (topology.nodes[i].cpu_less() || i >= node.distances.size()) continue;
    best = found ? std::min(best, node.distances[i]) : node.distances[i];
    found = true;
  }
  if (!found || best <= 0) best = node.cpu_less() ? 20 : 10;
  return static_cast<uint32_t>(best) * 9;
}

}  // namespace

Result<std::vector<Tier>> build_tiers(const Config& config, const hal::Topology& topology,
                                      const std::vector<int>& cxl_nodes) {
  // The kernel's memory tiers rank nodes by performance (lower = faster);
  // a node below the fastest tier that holds CPUs is far memory too.
  int fastest_cpu_tier = -1;
  for (const auto& node : topology.nodes) {
    if (!node.cpu_less() && node.memory_tier >= 0 &&
        (fastest_cpu_tier < 0 || node.memory_tier < fastest_cpu_tier)) {
      fastest_cpu_tier = node.memory_tier;
    }
  }
  std::vector<Tier> tiers;
  int first_dram_node = -1;
  if (config.numa_enabled) {
    for (const auto& node : topology.nodes) {
      if (std::find(config.numa_exclude_nodes.begin(), config.numa_exclude_nodes.end(), node.id) !=
          config.numa_exclude_nodes.end()) {
        continue;
      }
      Tier tier;
      tier.id = static_cast<uint32_t>(tiers.size());
      const bool slower_kernel_tier = fastest_cpu_tier >= 0 && node.memory_tier > fastest_cpu_tier;
      const bool far = node.cpu_less() || slower_kernel_tier ||
                       std::find(cxl_nodes.begin(), cxl_nodes.end(), node.id) != cxl_nodes.end();
      tier.kind = far ? proto::TierKind::kCxl : proto::TierKind::kDram;
      tier.name = (far ? "cxl" : "dram") + std::to_string(node.id);
      tier.numa_node = topology.numa_present ? node.id : -1;
      tier.own_node = true;
      tier.capacity = node.total_bytes / 100 * config.numa_capacity_percent;
      tier.latency_ns = latency_class_from_distance(topology, node);
      tiers.push_back(tier);
      if (!far && first_dram_node < 0) first_dram_node = node.id;
    }
  }
  if (first_dram_node < 0) {
    for (const auto& node : topology.nodes) {
      if (!node.cpu_less()) {
        first_dram_node = node.id;
        break;
      }
    }
  }
  for (const auto& emu : config.emulated_tiers) {
    for (const auto& t : tiers) {
      if (t.name == emu.name) return fail(EINVAL, "emulated tier '" + emu.name + "' clashes with a NUMA tier name");
    }
    Tier tier;
    tier.id = static_cast<uint32_t>(tiers.size());
    tier.kind = proto::TierKind::kEmulated;
    tier.name = emu.name;
    int node = emu.numa_node >= 0 ? emu.numa_node : first_dram_node;
    if (emu.numa_node >= 0 && find_node(topology, emu.numa_node) == nullptr) {
      return fail(ENODEV, "emulated tier '" + emu.name + "': NUMA node " +
                              std::to_string(emu.numa_node) + " does not exist on this host");
    }
    tier.numa_node = topology.numa_present ? node : -1;
    tier.capacity = emu.capacity;
    tier.latency_ns = emu.latency_ns;
    tier.bandwidth_mbps = emu.bandwidth_mbps;
    tier.backing = emu.backing;
    tier.hugetlbfs_path = emu.hugetlbfs_path;
    tiers.push_back(tier);
  }
  if (tiers.empty()) return fail(EINVAL, "no memory tiers: NUMA tiers disabled and no [[emulated_tier]]");
  return tiers;
}

uint64_t tier_free_bytes(const Tier& tier, const hal::Topology& topology) {
  uint64_t free = tier.capacity > tier.used ? tier.capacity - tier.used : 0;
  if (tier.numa_node >= 0) {
    if (const auto* node = find_node(topology, tier.numa_node)) free = std::min(free, node->free_bytes);
  }
  return free;
}

proto::TierInfo describe_tier(const Tier& tier, const hal::Topology& topology) {
  proto::TierInfo info;
  info.id = tier.id;
  info.kind = tier.kind;
  info.numa_node = tier.numa_node;
  info.name = tier.name;
  info.capacity = tier.capacity;
  info.used = tier.used;
  info.free = tier_free_bytes(tier, topology);
  info.latency_ns = tier.latency_ns;
  info.bandwidth_mbps = tier.bandwidth_mbps;
  info.page_size = 4096;
  return info;
}

const char* tier_kind_name(proto::TierKind kind) {
  switch (kind) {
    case proto::TierKind::kDram: return "dram";
    case proto::TierKind::kCxl: return "cxl";
    case proto::TierKind::kEmulated: return "emulated";
  }
  return "unknown";
}

}  // namespace cxlpool::daemon
