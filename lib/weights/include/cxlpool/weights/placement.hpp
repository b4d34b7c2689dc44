// SPDX-License-Identifier: Apache-2.0
// Roofline-style layer placement (after FlexGen and MoE-Lightning): given
// each layer's bytes and where it streams from (the shared region or the
// file on SSD), the bandwidth of each source, the compute time of each layer
// and a memory budget for layers kept in the compute window for good,
// decide which layers stay resident and how many layers to copy ahead so
// that copies hide behind compute.
//
// A decode pass runs the layers in order, over and over. Streamed layers go
// through one copy engine in order; acquiring layer i requests layer i+d; a
// streamed layer needs a free slot of the d+1 in the window. The plan is
// chosen by simulating that pipeline (plan_placement) rather than from a
// closed formula, so bursts of slow (file) layers are accounted for.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::weights {

enum class LayerSource : uint8_t { kRegion, kFile };

struct PlacementInput {
  std::vector<uint64_t> layer_bytes;
  std::vector<LayerSource> layer_source;  // empty: all kRegion
  std::vector<double> compute_ns;         // per layer; empty: compute-free
  uint64_t pinned_budget_bytes = 0;
  double region_bytes_per_sec = 0;        // measured copy bandwidth; > 0
  double file_bytes_per_sec = 0;          // measured SSD read bandwidth; > 0 if any layer is kFile
  uint32_t max_buffers = 8;               // window slots allowed, 2..8
};

struct PlacementPlan {
  std::vector<bool> pinned;
  uint64_t pinned_bytes = 0;
  uint32_t prefetch_depth = 1;
  uint32_t buffers = 2;           // prefetch_depth + 1
  double compute_ns_per_pass = 0;
  double load_ns_per_pass = 0;    // serial copy time of the streamed layers
  double pass_ns = 0;             // predicted steady-state pass time
  double stall_ns_per_pass = 0;   // pass_ns - compute_ns_per_pass
  bool copy_bound = false;        // loads exceed compute: no depth hides them
};

// Load time of one layer from its source, in ns.
double layer_load_ns(const PlacementInput& in, size_t layer);

// Simulates steady-state passes with the given pinned set and depth; returns
// the pass time in ns.
double simulate_pass_ns(const PlacementInput& in, const std::vector<bool>& pinned, uint32_t depth);

// EINVAL on inconsistent input (vector sizes, bandwidths, buffers out of 2..8).
Result<PlacementPlan> plan_placement(const PlacementInput& in);

}  // namespace cxlpool::weights
