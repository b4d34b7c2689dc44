// SPDX-License-Identifier: Apache-2.0
#include "evaluation.hpp"

#include <algorithm>
#include <cmath>

#include "m5_policy.hpp"
#include "reference_policies.hpp"

namespace cxlpool::tiering::eval {

const std::vector<std::string>& known_policies() {
  static const std::vector<std::string> names{"no-migration", "oracle", "hindsight", "damon", "autonuma", "m5-hpt", "m5-hwt"};
  return names;
}

TraceSummary summarize(const std::string& name, const PreparedTrace& trace, const SimConfig& sim) {
  TraceSummary s;
  s.name = name;
  s.records = trace.records;
  s.accesses = trace.accesses.size();
  s.pages = trace.pages();
  s.fast_pages = static_cast<std::uint64_t>(std::floor(sim.fast_fraction * static_cast<double>(trace.pages())));
  s.duration_ns = trace.duration_ns();
  return s;
}

Result<std::unique_ptr<Policy>> make_policy(const std::string& kind, double sampling_rate,
                                            const EvalOptions& options) {
  if (kind == "no-migration") return std::unique_ptr<Policy>(new NoMigrationPolicy());
  if (kind == "oracle") return std::unique_ptr<Policy>(new OraclePolicy(OracleWindow::kNext));
  if (kind == "hindsight") return std::unique_ptr<Policy>(new OraclePolicy(OracleWindow::kLast));
  if (kind == "damon") {
    DamonConfig c = options.damon;
    c.seed = options.seed;
    return std::unique_ptr<Policy>(new DamonPolicy(c));
  }
  if (kind == "autonuma") return std::unique_ptr<Policy>(new AutoNumaPolicy(options.autonuma));
  if (kind == "m5-hpt" || kind == "m5-hwt") {
    M5PolicyConfig c;
    c.manager = options.m5;
    c.manager.nominator = kind == "m5-hwt" ? NominatorMode::kHwt : NominatorMode::kHpt;
    c.sampling_rate = sampling_rate;
    c.sampling_unit = options.sampling_unit;
    c.exact_first = options.sampling_exact;
    // Behind a per-page sampler one access to a page is an observation (its
    // first in the period, always kept), not a coin that came up once: such
    // a tracker nominates from one access on, unless the knob was set.
    if (sampling_rate < 1.0 && c.sampling_unit == SamplingUnit::kPage && !options.m5_min_accesses_set)
      c.manager.min_accesses = 1;
    c.epoch_ns = options.m5_epoch_ns;
    c.burst_accesses = options.m5_burst_accesses;
    c.burst_quota = options.m5_burst_quota;
    c.burst_idle_ns = options.m5_burst_idle_ns;
    c.seed = options.seed;
    auto p = M5Policy::create(c);
    if (!p) return tl::unexpected(p.error());
    return std::unique_ptr<Policy>(std::move(*p));
  }
  return fail(EINVAL, "unknown policy '" + kind + "'");
}

Result<std::vector<PolicyRow>> evaluate_trace(const std::string& name, const PreparedTrace& trace,
                                              const EvalOptions& options,
                                              const std::function<void(const PolicyRow&)>& progress) {
  std::vector<PolicyRow> rows;
  for (const std::string& kind : options.policies) {
    const bool m5 = kind == "m5-hpt" || kind == "m5-hwt";
    const std::vector<double> rates = m5 ? options.sampling_rates : std::vector<double>{1.0};
    for (double rate : rates) {
      PolicyRow row;
      row.trace = name;
      row.kind = kind;
      row.sampling_rate = rate;
      auto policy = make_policy(kind, rate, options);
      if (!policy) return tl::unexpected(policy.error());
      SimConfig sim = options.sim;
      sim.detection = false;
      row.tiering = simulate(trace, **policy, sim);
      row.policy = row.tiering.policy;
      if (options.detection && kind != "no-migration" && kind != "hindsight") {
        auto fresh = make_policy(kind, rate, options);
        if (!fresh) return tl::unexpected(fresh.error());
        sim.detection = true;
        row.detection = simulate(trace, **fresh, sim);
      }
      rows.push_back(std::move(row));
      if (progress) progress(rows.back());
    }
  }
  const auto oracle = std::find_if(rows.begin(), rows.end(), [](const PolicyRow& r) { return r.kind == "oracle"; });
  if (oracle != rows.end() && oracle->tiering.fast_share > 0) {
    const double best = oracle->tiering.fast_share;
    for (PolicyRow& r : rows) r.share_vs_oracle = r.tiering.fast_share / best;
  }
  if (oracle != rows.end() && oracle->tiering.late_share > 0) {
    const double best = oracle->tiering.late_share;
    for (PolicyRow& r : rows) r.late_share_vs_oracle = r.tiering.late_share / best;
  }
  if (oracle != rows.end() && oracle->tiering.bytes_migrated > 0) {
    const auto moved = static_cast<double>(oracle->tiering.bytes_migrated);
    for (PolicyRow& r : rows) r.migrated_vs_oracle = static_cast<double>(r.tiering.bytes_migrated) / moved;
  }
  return rows;
}

}  // namespace cxlpool::tiering::eval
