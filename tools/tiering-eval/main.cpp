// SPDX-License-Identifier: Apache-2.0
// cxlpool-tiering-eval: replays traces (files, or the built-in workload
// generators) against M5-HPT, M5-HWT, DAMON-like, AutoNUMA-like, no-migration
// and oracle placement, and reports access-count ratio, fast-tier share,
// migration volume and tracker CPU cost (docs/tiering.md).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/tiering/trace_file.hpp"
#include "cxlpool/tiering/workloads.hpp"
#include "evaluation.hpp"
#include "report.hpp"

namespace {

using namespace cxlpool::tiering;
using namespace cxlpool::tiering::eval;

bool parse_rate(const std::string& s, double& out) {
  try {
    const auto slash = s.find('/');
    std::size_t used = 0;
    if (slash == std::string::npos) {
      out = std::stod(s, &used);
      if (used != s.size()) return false;
    } else {
      const std::string num = s.substr(0, slash), den = s.substr(slash + 1);
      const double a = std::stod(num, &used);
      if (used != num.size()) return false;
      const double b = std::stod(den, &used);
      if (used != den.size() || b == 0) return false;
      out = a / b;
    }
  } catch (const std::exception&) {
    return false;
  }
  return out > 0 && out <= 1;
}

std::string host_line() {
  std::string load;
  std::ifstream f("/proc/loadavg");
  std::getline(f, load);
  std::istringstream in(load);
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return std::to_string(std::thread::hardware_concurrency()) + " CPUs online, load average " + one + " / " + five +
         " / " + fifteen + " (1/5/15 min) at start; single-threaded run";
}

std::string join_args(int argc, char** argv) {
  std::string s = "cxlpool-tiering-eval";
  for (int i = 1; i < argc; ++i) {
    s += ' ';
    s += argv[i];
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Trace-driven evaluation of tiering policies: M5-HPT/HWT, DAMON-like, AutoNUMA-like, "
               "no migration, oracle (docs/tiering.md)"};
  app.set_version_flag("--version", "cxlpool-tiering-eval " CXLPOOL_VERSION_STRING);
  std::vector<std::string> trace_files;
  std::vector<std::string> workloads;
  std::string results_dir;
  double footprint_mib = 256;
  std::uint64_t accesses = 8'000'000;
  double duration_s = 20;
  double zipf_exponent = 0.99;
  std::uint32_t phases = 4;
  double hot_fraction = 0.1;
  std::uint64_t seed = 1;
  double fast_fraction = 0.25;
  std::string sampling_unit = "page";
  std::uint32_t sampling_exact = 3;
  std::string placement = "first-touch";
  std::vector<std::string> rates_text;
  double epoch_ms = 100;
  double m5_epoch_ms = 0;
  double oracle_epoch_ms = 1000;
  std::uint64_t burst_accesses = 0;
  std::uint64_t burst_quota = 0;
  double burst_idle_ms = 0;
  std::uint32_t ratio_k = 512;
  std::uint32_t buckets = 50;
  double migration_us = 54;
  std::vector<std::string> policies;
  std::vector<std::string> m5_knobs;
  bool quick = false;
  bool no_detection = false;

  app.add_option("--trace", trace_files, "trace file(s) to evaluate (docs/trace-format.md)");
  app.add_option("--workload", workloads, "generated workload(s): zipf, shifting, sparse-kv, graph, all")
      ->delimiter(',');
  app.add_option("--results", results_dir, "directory for results.md/.csv/.json and SVG plots");
  app.add_option("--footprint-mib", footprint_mib, "generated footprint, MiB (default 256)");
  app.add_option("--accesses", accesses, "generated records per workload (default 8000000)");
  app.add_option("--duration-s", duration_s, "generated trace time span, seconds (default 20)");
  app.add_option("--zipf-exponent", zipf_exponent, "page/key skew of the generators (default 0.99)");
  app.add_option("--phases", phases, "shifting: hot-set phases (default 4)");
  app.add_option("--hot-fraction", hot_fraction, "shifting: hot-set fraction of the pages (default 0.1)");
  app.add_option("--seed", seed, "seed of generators and policies' random choices (default 1)");
  app.add_option("--fast-fraction", fast_fraction, "fast-tier capacity / footprint (default 0.25)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--placement", placement, "initial placement: first-touch (default) or all-slow")
      ->check(CLI::IsMember({"first-touch", "all-slow"}));
  app.add_option("--sampling-rate", rates_text, "M5 tracker sampling rate(s), e.g. 1,1/8 (default 1)")
      ->delimiter(',');
  app.add_option("--sampling-unit", sampling_unit,
                 "how a sampling rate below 1 samples: page (a page's first --sampling-exact accesses per query period always, "
                 "default) or record (every access alike)")
      ->check(CLI::IsMember({"page", "record"}));
  app.add_option("--sampling-exact", sampling_exact,
                 "sampling unit page: a page's first N accesses per query period are always kept (default 3)")
      ->check(CLI::Range(1u, kMaxExactFirst));
  app.add_option("--epoch-ms", epoch_ms, "measurement epoch of the access-count ratio, ms (default 100)");
  app.add_option("--m5-epoch-ms", m5_epoch_ms, "M5 controller query period, ms (default: --epoch-ms)");
  app.add_option("--m5-burst-accesses", burst_accesses,
                 "experiment: M5 also promotes a slow page at once when its count in the query period reaches N "
                 "(default 0: off)");
  app.add_option("--m5-burst-quota", burst_quota, "experiment: at most N such promotions per query period (default 0: no limit)");
  app.add_option("--m5-burst-idle-ms", burst_idle_ms,
                 "experiment: the LRU fast page a burst promotion swaps out must have been idle this long, "
                 "0..1e9 (default 0)")
      ->check(CLI::Range(0.0, 1e9));  // in nanoseconds it must fit 64 bits
  app.add_option("--oracle-epoch-ms", oracle_epoch_ms, "oracle placement period, ms (default 1000)");
  app.add_option("--ratio-k", ratio_k, "K of the access-count ratio (default 512)")->check(CLI::PositiveNumber);
  app.add_option("--buckets", buckets, "points of the share-over-time series (default 50)");
  app.add_option("--migration-us", migration_us, "cost of migrating one page, us (default 54, M5's measurement)");
  app.add_option("--policies", policies, "subset: no-migration,oracle,hindsight,damon,autonuma,m5-hpt,m5-hwt")->delimiter(',');
  app.add_option("--m5-set", m5_knobs, "M5 manager knob KEY=VALUE (as `cxlpoolctl tiering set`); repeatable");
  app.add_flag("--quick", quick, "small traces (16 MiB, 300k records, 3 s) for tests");
  app.add_flag("--no-detection", no_detection, "skip the detection runs (no access-count ratio)");
  CLI11_PARSE(app, argc, argv);

  EvalOptions options;
  options.seed = seed;
  options.detection = !no_detection;
  options.sim.fast_fraction = fast_fraction;
  options.sampling_unit = sampling_unit == "record" ? SamplingUnit::kRecord : SamplingUnit::kPage;
  options.sampling_exact = sampling_exact;
  options.sim.placement = placement == "all-slow" ? InitialPlacement::kAllSlow : InitialPlacement::kFirstTouch;
  options.sim.epoch_ns = static_cast<std::uint64_t>(epoch_ms * 1e6);
  options.sim.ratio_k = ratio_k;
  options.sim.oracle_epoch_ns = static_cast<std::uint64_t>(oracle_epoch_ms * 1e6);
  options.sim.buckets = buckets;
  options.sim.migration_ns_per_page = static_cast<std::uint64_t>(migration_us * 1e3);
  options.m5_epoch_ns = static_cast<std::uint64_t>(m5_epoch_ms * 1e6);
  options.m5_burst_accesses = burst_accesses;
  options.m5_burst_quota = burst_quota;
  options.m5_burst_idle_ns = static_cast<std::uint64_t>(burst_idle_ms * 1e6);
  if (options.sim.epoch_ns == 0) {
    std::fprintf(stderr, "cxlpool-tiering-eval: --epoch-ms must be > 0\n");
    return 2;
  }
  if (quick) {
    if (!app.count("--footprint-mib")) footprint_mib = 16;
    if (!app.count("--accesses")) accesses = 300'000;
    if (!app.count("--duration-s")) duration_s = 3;
    if (!app.count("--buckets")) options.sim.buckets = 20;
  }
  for (const auto& kv : m5_knobs) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "cxlpool-tiering-eval: --m5-set wants KEY=VALUE, got '%s'\n", kv.c_str());
      return 2;
    }
    if (kv.substr(0, eq) == "min_accesses") options.m5_min_accesses_set = true;
    if (auto ok = options.m5.set(kv.substr(0, eq), kv.substr(eq + 1)); !ok) {
      std::fprintf(stderr, "cxlpool-tiering-eval: --m5-set %s: %s\n", kv.c_str(), ok.error().message.c_str());
      return 2;
    }
  }
  if (!rates_text.empty()) {
    options.sampling_rates.clear();
    for (const auto& t : rates_text) {
      double r = 0;
      if (!parse_rate(t, r)) {
        std::fprintf(stderr, "cxlpool-tiering-eval: bad sampling rate '%s' (want (0,1], e.g. 0.125 or 1/8)\n", t.c_str());
        return 2;
      }
      options.sampling_rates.push_back(r);
    }
  }
  if (!policies.empty()) {
    for (const auto& p : policies) {
      if (std::find(known_policies().begin(), known_policies().end(), p) == known_policies().end()) {
        std::fprintf(stderr, "cxlpool-tiering-eval: unknown policy '%s'\n", p.c_str());
        return 2;
      }
    }
    options.policies = policies;
  }
  std::vector<WorkloadKind> kinds;
  for (const auto& w : workloads) {
    if (w == "all") {
      for (auto k : all_workload_kinds()) kinds.push_back(k);
      continue;
    }
    auto k = parse_workload_kind(w);
    if (!k) {
      std::fprintf(stderr, "cxlpool-tiering-eval: unknown workload '%s'\n", w.c_str());
      return 2;
    }
    kinds.push_back(*k);
  }
  if (kinds.empty() && trace_files.empty()) {
    if (!quick && workloads.empty()) {
      std::fprintf(stderr, "cxlpool-tiering-eval: give --trace FILE, --workload NAME or --quick\n");
      return 2;
    }
    kinds = all_workload_kinds();
  }

  const auto wall0 = std::chrono::steady_clock::now();
  RunInfo info;
  info.command = join_args(argc, argv);
  info.host = host_line();
  info.options = options;
  std::vector<PolicyRow> all_rows;

  auto run_one = [&](const std::string& name, const std::string& origin,
                     const std::vector<TraceRecord>& records) -> bool {
    auto prepared = prepare_trace(records);
    if (!prepared) {
      std::fprintf(stderr, "cxlpool-tiering-eval: %s: %s\n", name.c_str(), prepared.error().message.c_str());
      return false;
    }
    info.traces.push_back(summarize(name, *prepared, options.sim));
    info.trace_origins.push_back(origin);
    auto rows = evaluate_trace(name, *prepared, options, [](const PolicyRow& r) {
      std::fprintf(stderr, "  %-10s %-14s %.1f s\n", r.trace.c_str(), r.policy.c_str(),
                   r.tiering.wall_s + (r.detection ? r.detection->wall_s : 0.0));
    });
    if (!rows) {
      std::fprintf(stderr, "cxlpool-tiering-eval: %s: %s\n", name.c_str(), rows.error().message.c_str());
      return false;
    }
    for (auto& r : *rows) all_rows.push_back(std::move(r));
    return true;
  };

  for (const auto& path : trace_files) {
    auto records = read_trace(path);
    if (!records) {
      std::fprintf(stderr, "cxlpool-tiering-eval: %s\n", records.error().message.c_str());
      return 1;
    }
    std::string name = path.substr(path.find_last_of('/') + 1);
    if (!run_one(name, path, *records)) return 1;
  }
  for (auto kind : kinds) {
    WorkloadConfig wc;
    wc.kind = kind;
    wc.footprint_bytes = static_cast<std::uint64_t>(footprint_mib * 1048576.0) / 4096 * 4096;
    wc.accesses = accesses;
    wc.seed = seed;
    wc.zipf_exponent = zipf_exponent;
    wc.duration_ns = static_cast<std::uint64_t>(duration_s * 1e9);
    wc.phases = phases;
    wc.hot_fraction = hot_fraction;
    auto records = generate_workload(wc);
    if (!records) {
      std::fprintf(stderr, "cxlpool-tiering-eval: %s: %s\n", workload_kind_name(kind), records.error().message.c_str());
      return 1;
    }
    char origin[160];
    std::snprintf(origin, sizeof origin, "generated: %g MiB, %llu records, %g s, seed %llu", footprint_mib,
                  static_cast<unsigned long long>(accesses), duration_s, static_cast<unsigned long long>(seed));
    if (!run_one(workload_kind_name(kind), origin, *records)) return 1;
  }
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  std::fputs(format_table(all_rows).c_str(), stdout);
  std::fputs("\n", stdout);
  std::fputs(format_targets(all_rows).c_str(), stdout);
  if (!results_dir.empty()) {
    if (auto ok = write_results(results_dir, info, all_rows); !ok) {
      std::fprintf(stderr, "cxlpool-tiering-eval: %s\n", ok.error().message.c_str());
      return 1;
    }
    std::fprintf(stderr, "results in %s (%.1f s)\n", results_dir.c_str(), info.wall_s);
  }
  return 0;
}
