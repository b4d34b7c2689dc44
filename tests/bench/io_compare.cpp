// SPDX-License-Identifier: Apache-2.0
// Compares cxlpool-io with fio run on the same jobs: reads a manifest of
// "<case> <fio|ours> <report.json>" lines (several runs per case and tool),
// takes per-metric medians and prints a Markdown table of ratios against
// fio: the median of the per-pair ratios (run i of fio against run i of
// cxlpool-io, made back to back), and in parentheses the ratio of medians.
// Both tools' JSON goes through the same reader (output/fio_report). Cases
// that also have "bare" runs (tests/bench/pread_loop, the plainest psync
// reader) get a second table: how that control compares with fio and with
// cxlpool-io, to tell a tool's cost from the machine's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "output/fio_report.hpp"

namespace {

using cxlpool::io::FioJob;
using cxlpool::io::FioReport;

struct Figures {
  double iops = 0;
  double bw_bytes = 0;
  double cpu_ns_per_io = 0;
  double p50_ns = 0;
  double p99_ns = 0;
};

// One run's figures: all jobs summed (rates) or I/O-weighted (CPU), the
// latency of the direction that did most I/O.
Figures figures_of(const FioReport& report) {
  Figures f;
  double cpu_ns = 0, ios = 0;
  const cxlpool::io::FioDirection* main_dir = nullptr;
  for (const FioJob& j : report.jobs) {
    f.iops += j.read.iops + j.write.iops;
    f.bw_bytes += static_cast<double>(j.read.bw_bytes + j.write.bw_bytes);
    cpu_ns += j.cpu_ns_per_io() * static_cast<double>(j.total_ios());
    ios += static_cast<double>(j.total_ios());
    for (const auto* d : {&j.read, &j.write})
      if (main_dir == nullptr || d->total_ios > main_dir->total_ios) main_dir = d;
  }
  f.cpu_ns_per_io = ios > 0 ? cpu_ns / ios : 0;
  if (main_dir != nullptr) {
    f.p50_ns = static_cast<double>(main_dir->clat.at(50.0));
    f.p99_ns = static_cast<double>(main_dir->clat.at(99.0));
  }
  return f;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Figures median_of(const std::vector<Figures>& runs) {
  std::vector<double> a, b, c, d, e;
  for (const auto& r : runs) {
    a.push_back(r.iops);
    b.push_back(r.bw_bytes);
    c.push_back(r.cpu_ns_per_io);
    d.push_back(r.p50_ns);
    e.push_back(r.p99_ns);
  }
  return {median(a), median(b), median(c), median(d), median(e)};
}

std::string ratio(double ours, double fio) { return fio > 0 ? fmt::format("{:.3f}", ours / fio) : "n/a"; }

// Median over the runs made back to back (run i of each tool) of ours/fio:
// the machine's slow drift cancels within a pair.
double paired_ratio(const std::vector<Figures>& fio, const std::vector<Figures>& ours, double Figures::*field) {
  std::vector<double> r;
  for (std::size_t i = 0; i < std::min(fio.size(), ours.size()); ++i)
    if (fio[i].*field > 0) r.push_back(ours[i].*field / (fio[i].*field));
  return median(r);
}
std::string delta_pct(double ours, double fio) {
  return fio > 0 ? fmt::format("{:+.1f}%", 100.0 * (ours - fio) / fio) : "n/a";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MANIFEST\n  MANIFEST lines: <case> <fio|ours|bare> <report.json>\n", argv[0]);
    return 2;
  }
  std::ifstream manifest(argv[1]);
  if (!manifest) {
    std::fprintf(stderr, "io_compare: cannot open %s\n", argv[1]);
    return 2;
  }
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::vector<Figures>>> runs;  // case -> tool -> runs
  std::string line;
  int line_no = 0;
  while (std::getline(manifest, line)) {
    ++line_no;
    std::istringstream in(line);
    std::string name, tool, path;
    if (!(in >> name >> tool >> path)) continue;
    if (tool != "fio" && tool != "ours" && tool != "bare") {
      std::fprintf(stderr, "io_compare: %s:%d: tool must be fio, ours or bare, not '%s'\n", argv[1], line_no,
                   tool.c_str());
      return 2;
    }
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    auto report = cxlpool::io::read_fio_report(text.str());
    if (!report) {
      std::fprintf(stderr, "io_compare: %s: %s\n", path.c_str(), report.error().message.c_str());
      return 1;
    }
    for (const auto& j : report->jobs) {
      if (j.error != 0) {
        std::fprintf(stderr, "io_compare: %s: job %s ended with error %d\n", path.c_str(), j.name.c_str(), j.error);
        return 1;
      }
    }
    if (!runs.count(name)) order.push_back(name);
    runs[name][tool].push_back(figures_of(*report));
  }

  std::printf("| case | fio IOPS | cxlpool-io IOPS | IOPS ratio | BW ratio | fio CPU/IO (us) | cxlpool-io CPU/IO (us) | CPU/IO ratio | fio p50 (us) | p50 diff | fio p99 (us) | p99 diff | runs |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& name : order) {
    const auto& by_tool = runs[name];
    if (!by_tool.count("fio") || !by_tool.count("ours")) {
      std::printf("| %s | (missing %s) |||||||||||\n", name.c_str(), by_tool.count("fio") ? "cxlpool-io" : "fio");
      continue;
    }
    const auto& fio_runs = by_tool.at("fio");
    const auto& our_runs = by_tool.at("ours");
    const auto fio = median_of(fio_runs);
    const auto ours = median_of(our_runs);
    std::printf("| %s | %.0f | %.0f | %.3f (%s) | %.3f | %.2f | %.2f | %.3f (%s) | %.1f | %s | %.1f | %s | %zu/%zu |\n",
                name.c_str(), fio.iops, ours.iops, paired_ratio(fio_runs, our_runs, &Figures::iops),
                ratio(ours.iops, fio.iops).c_str(), paired_ratio(fio_runs, our_runs, &Figures::bw_bytes),
                fio.cpu_ns_per_io / 1000, ours.cpu_ns_per_io / 1000,
                paired_ratio(fio_runs, our_runs, &Figures::cpu_ns_per_io),
                ratio(ours.cpu_ns_per_io, fio.cpu_ns_per_io).c_str(),
                fio.p50_ns / 1000, delta_pct(ours.p50_ns, fio.p50_ns).c_str(), fio.p99_ns / 1000,
                delta_pct(ours.p99_ns, fio.p99_ns).c_str(), by_tool.at("fio").size(), by_tool.at("ours").size());
  }

  bool header = false;
  for (const auto& name : order) {
    const auto& by_tool = runs[name];
    if (!by_tool.count("bare") || !by_tool.count("fio") || !by_tool.count("ours")) continue;
    if (!header) {
      std::printf("\nControl: a bare pread loop (tests/bench/pread_loop) on the same target, same runs:\n\n");
      std::printf("| case | bare IOPS | bare/fio IOPS | cxlpool-io/bare IOPS | bare CPU/IO (us) | bare/fio CPU/IO | bare p50 (us) | runs |\n");
      std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
      header = true;
    }
    const auto& bare_runs = by_tool.at("bare");
    const auto bare = median_of(bare_runs);
    std::printf("| %s | %.0f | %.3f | %.3f | %.2f | %.3f | %.1f | %zu |\n", name.c_str(), bare.iops,
                paired_ratio(by_tool.at("fio"), bare_runs, &Figures::iops),
                paired_ratio(bare_runs, by_tool.at("ours"), &Figures::iops), bare.cpu_ns_per_io / 1000,
                paired_ratio(by_tool.at("fio"), bare_runs, &Figures::cpu_ns_per_io), bare.p50_ns / 1000,
                bare_runs.size());
  }
  return 0;
}
