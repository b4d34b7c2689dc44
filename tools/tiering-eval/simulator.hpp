// SPDX-License-Identifier: Apache-2.0
// Trace-driven tiering simulator: replays a prepared trace in time order
// against a two-tier placement, lets one policy track and migrate, and
// measures what the policy achieved (fast-tier access share over time, bytes
// migrated, access-count ratio of its hot-page picks, its CPU time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy.hpp"
#include "prepared_trace.hpp"

namespace cxlpool::tiering::eval {

enum class InitialPlacement : std::uint8_t {
  kFirstTouch,  // pages in first-touch order fill the fast tier, the rest go slow
  kAllSlow,     // every page starts on the slow tier
};

struct SimConfig {
  double fast_fraction = 0.25;  // fast-tier capacity / footprint pages
  InitialPlacement placement = InitialPlacement::kFirstTouch;
  std::uint64_t epoch_ns = 100'000'000;        // measurement epoch (access-count ratio)
  std::uint64_t oracle_epoch_ns = 0;           // the oracle's placement period; 0 = epoch_ns
  std::uint32_t buckets = 50;                  // fast-share time series points
  std::uint32_t ratio_k = 512;                 // K of the access-count ratio
  std::uint64_t migration_ns_per_page = 54'000;  // M5's measured cost of one page migration
  std::uint32_t batch = 256;                   // accesses per observe() call
  // Detection run: every page on the slow tier, no migration allowed; the
  // policy tracks what a tracker sees when all memory is on the slow tier.
  bool detection = false;
};

struct SimResult {
  std::string policy;
  std::uint64_t accesses = 0;
  std::uint64_t fast_accesses = 0;
  double fast_share = 0;
  // The same over the second half of the trace's time span only: past a
  // policy's warm-up, where the first half holds it.
  std::uint64_t late_accesses = 0;
  std::uint64_t late_fast_accesses = 0;
  double late_share = 0;
  std::vector<double> share_series;   // per time bucket; negative = no accesses
  std::uint64_t bucket_ns = 0;
  std::uint64_t promotions = 0;
  std::uint64_t demotions = 0;
  std::uint64_t bytes_migrated = 0;
  double migration_s = 0;             // pages migrated x migration_ns_per_page
  bool has_ratio = false;
  double ratio = 0;                   // mean access-count ratio over epochs with accesses
  std::uint64_t ratio_epochs = 0;
  double mean_picks = 0;              // pages picked per epoch (before the K cut)
  std::vector<double> ratio_series;   // per epoch
  std::uint64_t policy_ns = 0;        // host CPU time in the policy's code (observe + events)
  std::uint64_t hardware_ns = 0;      // CPU time in its model of hardware trackers (M5's controller)
  double hardware_ns_per_access = 0;
  double ns_per_access = 0;
  double cpu_ms_per_million = 0;
  double wall_s = 0;
  Counters counters;
};

// The accesses of the true top-k pages of a count vector restricted to `pages`.
std::uint64_t top_k_sum(const std::vector<std::uint32_t>& counts, const std::vector<std::uint32_t>& pages,
                        std::size_t k);

SimResult simulate(const PreparedTrace& trace, Policy& policy, const SimConfig& config);

}  // namespace cxlpool::tiering::eval
