// SPDX-License-Identifier: Apache-2.0
#include "report.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "svg_plot.hpp"

namespace cxlpool::tiering::eval {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string ratio_cell(const PolicyRow& r) {
  if (!r.detection || !r.detection->has_ratio) return "n/a";
  return fmt("%.3f", r.detection->ratio);
}

double gib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1ULL << 30); }

struct Column {
  std::string head;
  std::vector<std::string> cells;
};

std::vector<Column> columns(const std::vector<PolicyRow>& rows) {
  std::vector<Column> c{{"trace", {}},           {"policy", {}},        {"access-count ratio", {}},
                        {"fast share", {}},      {"vs oracle", {}},     {"2nd half vs oracle", {}},
                        {"migrated GiB", {}},
                        {"migrated vs oracle", {}}, {"migration s", {}},     {"host CPU ms/M acc", {}}, {"tracker-model ms/M acc", {}}};
  for (const PolicyRow& r : rows) {
    c[0].cells.push_back(r.trace);
    c[1].cells.push_back(r.policy);
    c[2].cells.push_back(ratio_cell(r));
    c[3].cells.push_back(fmt("%.3f", r.tiering.fast_share));
    c[4].cells.push_back(r.share_vs_oracle > 0 ? fmt("%.3f", r.share_vs_oracle) : "-");
    c[5].cells.push_back(r.late_share_vs_oracle > 0 ? fmt("%.3f", r.late_share_vs_oracle) : "-");
    c[6].cells.push_back(fmt("%.3f", gib(r.tiering.bytes_migrated)));
    c[7].cells.push_back(r.migrated_vs_oracle >= 0 ? fmt("%.2f", r.migrated_vs_oracle) : "-");
    c[8].cells.push_back(fmt("%.2f", r.tiering.migration_s));
    const bool cost = r.kind != "no-migration" && r.kind != "oracle" && r.kind != "hindsight";
    c[9].cells.push_back(cost ? fmt("%.1f", r.tiering.cpu_ms_per_million) : "-");
    c[10].cells.push_back(r.tiering.hardware_ns ? fmt("%.1f", r.tiering.hardware_ns_per_access) : "-");
  }
  return c;
}

std::string markdown_table(const std::vector<PolicyRow>& rows) {
  const auto cols = columns(rows);
  std::string out = "|";
  for (const auto& c : cols) out += " " + c.head + " |";
  out += "\n|";
  for (std::size_t i = 0; i < cols.size(); ++i) out += i < 2 ? "---|" : "---:|";
  out += "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += "|";
    for (const auto& c : cols) out += " " + c.cells[r] + " |";
    out += "\n";
  }
  return out;
}

const PolicyRow* find(const std::vector<PolicyRow>& rows, const std::string& trace, const std::string& kind) {
  for (const PolicyRow& r : rows)
    if (r.trace == trace && r.kind == kind && r.sampling_rate >= 1.0) return &r;
  return nullptr;
}

double ratio_of(const PolicyRow* r) { return r && r->detection && r->detection->has_ratio ? r->detection->ratio : -1; }

// The distinct values of one column of the rows, in order of first appearance.
std::vector<std::string> distinct(const std::vector<PolicyRow>& rows, std::string PolicyRow::*column) {
  std::vector<std::string> out;
  for (const PolicyRow& r : rows)
    if (std::find(out.begin(), out.end(), r.*column) == out.end()) out.push_back(r.*column);
  return out;
}

std::vector<std::string> traces_of(const std::vector<PolicyRow>& rows) { return distinct(rows, &PolicyRow::trace); }
std::vector<std::string> policies_of(const std::vector<PolicyRow>& rows) { return distinct(rows, &PolicyRow::policy); }

nlohmann::json sim_json(const SimResult& s) {
  nlohmann::json j;
  j["accesses"] = s.accesses;
  j["fast_accesses"] = s.fast_accesses;
  j["fast_share"] = s.fast_share;
  j["late_accesses"] = s.late_accesses;
  j["late_fast_accesses"] = s.late_fast_accesses;
  j["late_share"] = s.late_share;
  j["share_series"] = s.share_series;
  j["bucket_ns"] = s.bucket_ns;
  j["promotions"] = s.promotions;
  j["demotions"] = s.demotions;
  j["bytes_migrated"] = s.bytes_migrated;
  j["migration_s"] = s.migration_s;
  if (s.has_ratio) {
    j["ratio"] = s.ratio;
    j["ratio_epochs"] = s.ratio_epochs;
    j["mean_picks"] = s.mean_picks;
    j["ratio_series"] = s.ratio_series;
  }
  j["host_cpu_ns"] = s.policy_ns;
  j["host_ns_per_access"] = s.ns_per_access;
  j["host_cpu_ms_per_million_accesses"] = s.cpu_ms_per_million;
  j["tracker_model_ns"] = s.hardware_ns;
  j["tracker_model_ns_per_access"] = s.hardware_ns_per_access;
  j["wall_s"] = s.wall_s;
  nlohmann::json c = nlohmann::json::object();
  for (const auto& [k, v] : s.counters) c[k] = v;
  j["counters"] = c;
  return j;
}

Result<void> write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return fail(errno ? errno : EIO, "cannot write " + path.string());
  f << text;
  f.close();
  if (!f) return fail(EIO, "cannot write " + path.string());
  return {};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

}  // namespace

std::string format_table(const std::vector<PolicyRow>& rows) {
  const auto cols = columns(rows);
  std::vector<std::size_t> width;
  for (const auto& c : cols) {
    std::size_t w = c.head.size();
    for (const auto& cell : c.cells) w = std::max(w, cell.size());
    width.push_back(w);
  }
  std::string out;
  auto pad = [](const std::string& s, std::size_t w, bool left) {
    const std::string fill(w > s.size() ? w - s.size() : 0, ' ');
    return left ? s + fill : fill + s;
  };
  for (std::size_t i = 0; i < cols.size(); ++i) out += pad(cols[i].head, width[i], i < 2) + (i + 1 < cols.size() ? "  " : "\n");
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t i = 0; i < cols.size(); ++i)
      out += pad(cols[i].cells[r], width[i], i < 2) + (i + 1 < cols.size() ? "  " : "\n");
  return out;
}

std::string format_targets(const std::vector<PolicyRow>& rows) {
  std::string out;
  for (const std::string& trace : traces_of(rows)) {
    for (const char* kind : {"m5-hpt", "m5-hwt"}) {
      const PolicyRow* m5 = find(rows, trace, kind);
      if (!m5) continue;
      const double ratio = ratio_of(m5);
      const double damon = ratio_of(find(rows, trace, "damon"));
      const double anb = ratio_of(find(rows, trace, "autonuma"));
      const double best = std::max(damon, anb);
      out += "- " + trace + ", " + kind + ": ratio " + (ratio >= 0 ? fmt("%.3f", ratio) : "n/a") +
             (ratio >= 0.9 ? " (>= 0.9: met)" : " (>= 0.9: missed)");
      const bool wants_gain = trace.find("sparse") != std::string::npos || trace.find("shift") != std::string::npos;
      if (best > 0 && ratio >= 0) {
        const double gain = ratio / best;
        out += ", " + fmt("%.2f", gain) + "x the better baseline (" + fmt("%.3f", best) + ")";
        if (wants_gain) out += gain >= 1.5 ? " (>= 1.5x: met)" : " (>= 1.5x: missed)";
      }
      if (m5->share_vs_oracle > 0)
        out += ", fast share " + fmt("%.3f", m5->share_vs_oracle) + " of oracle" +
               (m5->share_vs_oracle >= 0.95 ? " (>= 0.95: met)" : " (>= 0.95: missed)");
      out += "\n";
    }
  }
  return out;
}

Result<void> write_results(const std::string& dir, const RunInfo& info, const std::vector<PolicyRow>& rows) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(ec.value(), "cannot create " + dir + ": " + ec.message());
  const fs::path root(dir);
  const EvalOptions& o = info.options;

  // results.md
  std::string md = "# Tiering evaluation results\n\n";
  md += "Command: `" + info.command + "`\n\n";
  if (!info.host.empty()) md += "Host: " + info.host + "\n\n";
  md += "Wall time: " + fmt("%.1f", info.wall_s) + " s\n\n";
  md += "Parameters: fast tier " + fmt("%.3g", o.sim.fast_fraction) + " of the footprint, initial placement " +
        (o.sim.placement == InitialPlacement::kFirstTouch ? "first-touch" : "all-slow") + ", epoch " +
        fmt("%.0f", static_cast<double>(o.sim.epoch_ns) / 1e6) + " ms, oracle epoch " +
        fmt("%.0f", static_cast<double>(o.sim.oracle_epoch_ns ? o.sim.oracle_epoch_ns : o.sim.epoch_ns) / 1e6) +
        " ms, M5 query period " +
        fmt("%.0f", static_cast<double>(o.m5_epoch_ns ? o.m5_epoch_ns : o.sim.epoch_ns) / 1e6) + " ms, K = " + std::to_string(o.sim.ratio_k) +
        ", migration cost " + fmt("%.0f", static_cast<double>(o.sim.migration_ns_per_page) / 1e3) + " us/page.\n\n";
  md += "## Traces\n\n| trace | origin | records | page accesses | pages | fast-tier pages | duration s |\n"
        "|---|---|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < info.traces.size(); ++i) {
    const TraceSummary& t = info.traces[i];
    md += "| " + t.name + " | " + (i < info.trace_origins.size() ? info.trace_origins[i] : "") + " | " +
          std::to_string(t.records) + " | " + std::to_string(t.accesses) + " | " + std::to_string(t.pages) + " | " +
          std::to_string(t.fast_pages) + " | " + fmt("%.1f", static_cast<double>(t.duration_ns) / 1e9) + " |\n";
  }
  md += "\n## Results\n\n" + markdown_table(rows);
  md += "\nAccess-count ratio: detection run (every page on the slow tier, nothing moves). Fast share, "
        "migration and CPU: tiering run. n/a: the policy identifies no hot pages.\n";
  md += "\n## Targets\n\n" + format_targets(rows);
  md += "\n## Policy counters (tiering run)\n\n";
  for (const PolicyRow& r : rows) {
    if (r.tiering.counters.empty()) continue;
    md += "- " + r.trace + " / " + r.policy + ":";
    for (const auto& [k, v] : r.tiering.counters) md += " " + k + "=" + std::to_string(v);
    md += "\n";
  }
  md += "\n## Plots\n\n![access-count ratio](ratio.svg)\n";
  for (const std::string& t : traces_of(rows)) md += "\n![fast-tier share, " + t + "](share_" + safe_name(t) + ".svg)\n";
  if (auto ok = write_file(root / "results.md", md); !ok) return ok;

  // results.csv
  std::string csv =
      "trace,policy,kind,sampling_rate,access_count_ratio,ratio_epochs,mean_picks,fast_share,share_vs_oracle,"
      "promotions,demotions,bytes_migrated,migration_s,host_cpu_ms_per_million_accesses,"
      "tracker_model_ms_per_million_accesses,accesses,late_share,late_share_vs_oracle\n";
  for (const PolicyRow& r : rows) {
    const bool ratio = r.detection && r.detection->has_ratio;
    csv += csv_field(r.trace) + "," + csv_field(r.policy) + "," + r.kind + "," + fmt("%g", r.sampling_rate) + "," +
           (ratio ? fmt("%.6f", r.detection->ratio) : "") + "," +
           (ratio ? std::to_string(r.detection->ratio_epochs) : "") + "," +
           (ratio ? fmt("%.1f", r.detection->mean_picks) : "") + "," + fmt("%.6f", r.tiering.fast_share) + "," +
           fmt("%.6f", r.share_vs_oracle) + "," + std::to_string(r.tiering.promotions) + "," +
           std::to_string(r.tiering.demotions) + "," + std::to_string(r.tiering.bytes_migrated) + "," +
           fmt("%.4f", r.tiering.migration_s) + "," + fmt("%.3f", r.tiering.cpu_ms_per_million) + "," +
           fmt("%.3f", r.tiering.hardware_ns_per_access) + "," + std::to_string(r.tiering.accesses) + "," +
           fmt("%.6f", r.tiering.late_share) + "," + fmt("%.6f", r.late_share_vs_oracle) + "\n";
  }
  if (auto ok = write_file(root / "results.csv", csv); !ok) return ok;

  // results.json
  nlohmann::json j;
  j["command"] = info.command;
  j["host"] = info.host;
  j["wall_s"] = info.wall_s;
  j["parameters"] = {{"fast_fraction", o.sim.fast_fraction},
                     {"placement", o.sim.placement == InitialPlacement::kFirstTouch ? "first-touch" : "all-slow"},
                     {"epoch_ns", o.sim.epoch_ns},
                     {"oracle_epoch_ns", o.sim.oracle_epoch_ns ? o.sim.oracle_epoch_ns : o.sim.epoch_ns},
                     {"m5_epoch_ns", o.m5_epoch_ns ? o.m5_epoch_ns : o.sim.epoch_ns},
                     {"ratio_k", o.sim.ratio_k},
                     {"migration_ns_per_page", o.sim.migration_ns_per_page},
                     {"sampling_rates", o.sampling_rates},
                     {"seed", o.seed}};
  j["traces"] = nlohmann::json::array();
  for (std::size_t i = 0; i < info.traces.size(); ++i) {
    const TraceSummary& t = info.traces[i];
    j["traces"].push_back({{"name", t.name},
                           {"origin", i < info.trace_origins.size() ? info.trace_origins[i] : ""},
                           {"records", t.records},
                           {"accesses", t.accesses},
                           {"pages", t.pages},
                           {"fast_pages", t.fast_pages},
                           {"duration_ns", t.duration_ns}});
  }
  j["results"] = nlohmann::json::array();
  for (const PolicyRow& r : rows) {
    nlohmann::json e;
    e["trace"] = r.trace;
    e["policy"] = r.policy;
    e["kind"] = r.kind;
    e["sampling_rate"] = r.sampling_rate;
    e["share_vs_oracle"] = r.share_vs_oracle;
    e["late_share_vs_oracle"] = r.late_share_vs_oracle;
    if (r.migrated_vs_oracle >= 0) e["migrated_vs_oracle"] = r.migrated_vs_oracle;
    e["tiering"] = sim_json(r.tiering);
    if (r.detection) e["detection"] = sim_json(*r.detection);
    j["results"].push_back(std::move(e));
  }
  if (auto ok = write_file(root / "results.json", j.dump(1) + "\n"); !ok) return ok;

  // Plots.
  const auto policies = policies_of(rows);
  BarChart bars;
  bars.title = "Access-count ratio (picked K pages / true top-K, detection run)";
  bars.y_label = "access-count ratio";
  bars.reference = 0.9;
  for (const std::string& p : policies) {
    const bool any = std::any_of(rows.begin(), rows.end(), [&](const PolicyRow& r) {
      return r.policy == p && r.detection && r.detection->has_ratio;
    });
    if (any) bars.bar_labels.push_back(p);
  }
  for (const std::string& t : traces_of(rows)) {
    BarGroup g;
    g.label = t;
    for (const std::string& p : bars.bar_labels) {
      double v = -1;
      for (const PolicyRow& r : rows)
        if (r.trace == t && r.policy == p && r.detection && r.detection->has_ratio) v = r.detection->ratio;
      g.values.push_back(v);
    }
    bars.groups.push_back(std::move(g));
  }
  if (auto ok = write_file(root / "ratio.svg", render_svg(bars)); !ok) return ok;

  for (const std::string& t : traces_of(rows)) {
    LineChart chart;
    chart.title = "Fast-tier access share over time: " + t;
    chart.x_label = "trace time (s)";
    chart.y_label = "accesses served by the fast tier";
    for (const PolicyRow& r : rows) {
      if (r.trace != t) continue;
      LineSeries s;
      s.label = r.policy;
      const auto& series = r.tiering.share_series;
      for (std::size_t b = 0; b < series.size(); ++b) {
        s.x.push_back((static_cast<double>(b) + 0.5) * static_cast<double>(r.tiering.bucket_ns) / 1e9);
        s.y.push_back(series[b]);
      }
      chart.series.push_back(std::move(s));
    }
    if (auto ok = write_file(root / ("share_" + safe_name(t) + ".svg"), render_svg(chart)); !ok) return ok;
  }
  return {};
}

}  // namespace cxlpool::tiering::eval
