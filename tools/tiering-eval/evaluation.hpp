// SPDX-License-Identifier: Apache-2.0
// The evaluation matrix: every policy on every trace, twice per policy --
// a tiering run (migrations applied; fast-tier share, bytes migrated, CPU)
// and a detection run (all pages on the slow tier, nothing moves; the
// access-count ratio of the pages the policy identifies as hot, which is how
// M5 measures it: every access visible to every tracker, exact counts as
// the truth).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autonuma_policy.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "damon_policy.hpp"
#include "m5_policy.hpp"
#include "simulator.hpp"

namespace cxlpool::tiering::eval {

struct EvalOptions {
  SimConfig sim;
  std::vector<double> sampling_rates{1.0};  // M5 tracker sampling rates
  SamplingUnit sampling_unit = SamplingUnit::kPage;  // how a rate below 1 samples
  std::uint32_t sampling_exact = 3;  // kPage: a page's accesses per query period always kept
  bool m5_min_accesses_set = false;  // min_accesses given explicitly (--m5-set)
  // "no-migration", "oracle", "hindsight", "damon", "autonuma", "m5-hpt", "m5-hwt".
  std::vector<std::string> policies{"no-migration", "oracle", "hindsight", "damon", "autonuma", "m5-hpt", "m5-hwt"};
  M5Config m5;
  std::uint64_t m5_epoch_ns = 0;  // 0 = sim.epoch_ns
  std::uint64_t m5_burst_accesses = 0;  // M5PolicyConfig::burst_*; 0 = off
  std::uint64_t m5_burst_quota = 0;
  std::uint64_t m5_burst_idle_ns = 0;
  DamonConfig damon;
  AutoNumaConfig autonuma;
  std::uint64_t seed = 1;
  bool detection = true;  // also run the detection runs (access-count ratio)
};

const std::vector<std::string>& known_policies();

struct PolicyRow {
  std::string trace;
  std::string policy;       // display name, e.g. "m5-hpt@1/8"
  std::string kind;         // policy family: one of known_policies()
  double sampling_rate = 1.0;
  SimResult tiering;
  std::optional<SimResult> detection;
  double share_vs_oracle = 0;  // tiering.fast_share / oracle's (0 if no oracle ran)
  double late_share_vs_oracle = 0;  // the same over the trace's second half (tiering.late_share)
  double migrated_vs_oracle = -1;  // tiering.bytes_migrated / oracle's (-1 if no oracle ran or it moved nothing)
};

struct TraceSummary {
  std::string name;
  std::uint64_t records = 0;
  std::uint64_t accesses = 0;  // page accesses after splitting records at page boundaries
  std::uint64_t pages = 0;
  std::uint64_t fast_pages = 0;
  std::uint64_t duration_ns = 0;
};

TraceSummary summarize(const std::string& name, const PreparedTrace& trace, const SimConfig& sim);

// EINVAL: unknown policy name, bad M5 config or sampling rate.
Result<std::unique_ptr<Policy>> make_policy(const std::string& kind, double sampling_rate,
                                            const EvalOptions& options);

// Runs every policy (and sampling rate, for M5) on one trace. `progress`
// is told of each finished run.
Result<std::vector<PolicyRow>> evaluate_trace(const std::string& name, const PreparedTrace& trace,
                                              const EvalOptions& options,
                                              const std::function<void(const PolicyRow&)>& progress = {});

}  // namespace cxlpool::tiering::eval
