// SPDX-License-Identifier: Apache-2.0
// A memory tier as the pool sees it: where its pages live, how much the pool
// may hand out, and how much it has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "cxlpool/hal/topology.hpp"
#include "cxlpool/proto/messages.hpp"

namespace cxlpool::daemon {

struct Tier {
  uint32_t id = 0;
  proto::TierKind kind = proto::TierKind::kDram;
  std::string name;
  int numa_node = -1;       // node its pages are bound to; -1: no binding possible
  bool own_node = false;    // the tier is a NUMA node (not emulated on one)
  uint64_t capacity = 0;
  uint64_t used = 0;
  uint32_t latency_ns = 0;
  uint32_t bandwidth_mbps = 0;
  EmulatedBacking backing = EmulatedBacking::kMemfd;
  std::string hugetlbfs_path;
};

// Builds the tier list: one tier per NUMA node with memory (kind cxl when
// the node has no CPUs, sits in a slower kernel memory tier than the
// fastest one with CPUs, or is the target node of a CXL region in
// `cxl_nodes`; dram otherwise), skipping excluded nodes, then the emulated
// tiers of the config. Ids follow that order.
Result<std::vector<Tier>> build_tiers(const Config& config, const hal::Topology& topology,
                                      const std::vector<int>& cxl_nodes = {});

// Free bytes a tier can still hand out: capacity - used, and for tiers with a
// node never more than the node's free memory.
uint64_t tier_free_bytes(const Tier& tier, const hal::Topology& topology);

proto::TierInfo describe_tier(const Tier& tier, const hal::Topology& topology);

const char* tier_kind_name(proto::TierKind kind);

}  // namespace cxlpool::daemon
