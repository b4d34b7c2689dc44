// SPDX-License-Identifier: Apache-2.0
// --plot DIR: per job an SVG of bandwidth over time (from its bandwidth log
// when it kept one, else its per-second samples) and an SVG of the
// completion-latency CDF per direction (from the histogram, so it costs
// nothing per I/O), plus index.html showing them with the headline figures.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "output.hpp"
#include "report_model.hpp"
#include "svg_chart.hpp"

namespace cxlpool::io {

namespace fs = std::filesystem;

namespace {

const char* dir_name(int d) { return d == kReadDir ? "read" : "write"; }

LineChart bandwidth_chart(const JobResult& job) {
  LineChart chart;
  chart.title = fmt::format("{} (job {}): bandwidth over time", job.spec.name, job.spec.clone);
  chart.x_label = "time (s)";
  chart.y_label = "MiB/s";
  for (int d = 0; d < 2; ++d) {
    ChartSeries s;
    s.name = dir_name(d);
    for (const auto& sample : job.bw_log) {
      if (sample.direction == d)
        s.points.emplace_back(static_cast<double>(sample.time_ms) / 1000.0, static_cast<double>(sample.value) / 1024.0);
    }
    if (s.points.empty()) {
      const auto& per_second = job.dir[d].bw_samples_kib;
      for (std::size_t i = 0; i < per_second.size(); ++i)
        s.points.emplace_back(static_cast<double>(i + 1), static_cast<double>(per_second[i]) / 1024.0);
    }
    if (!s.points.empty()) chart.series.push_back(std::move(s));
  }
  return chart;
}

LineChart latency_cdf_chart(const JobResult& job) {
  LineChart chart;
  chart.title = fmt::format("{} (job {}): completion latency CDF", job.spec.name, job.spec.clone);
  chart.x_label = "clat (us, log scale)";
  chart.y_label = "% of I/Os at or below";
  chart.log_x = true;
  for (int d = 0; d < 2; ++d) {
    const auto& h = job.dir[d].clat;
    if (h.count() == 0) continue;
    ChartSeries s;
    s.name = dir_name(d);
    std::uint64_t seen = 0;
    for (const auto& bin : h.bins()) {
      seen += bin.count;
      s.points.emplace_back(static_cast<double>(bin.value_ns) / 1000.0,
                            100.0 * static_cast<double>(seen) / static_cast<double>(h.count()));
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

Result<void> write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return fail_errno("open " + path.string());
  out << text;
  out.close();
  if (!out) return fail(EIO, "write " + path.string());
  return {};
}

}  // namespace

Result<void> write_plots(const RunResult& run, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(ec.value(), fmt::format("create {}: {}", dir.string(), ec.message()));

  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cxlpool-io {}</title>\n"
      "<style>body{{font-family:sans-serif}} table{{border-collapse:collapse}} "
      "td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}</style></head><body>\n"
      "<h1>cxlpool-io results</h1>\n<p>{}</p>\n<table><tr><th>job</th><th>dir</th><th>IOPS</th><th>MiB/s</th>"
      "<th>clat p50 (us)</th><th>clat p99 (us)</th><th>clat p99.9 (us)</th></tr>\n",
      xml_escape(run.time_text), xml_escape(run.version));
  for (const auto& job : run.jobs) {
    for (int d = 0; d < 2; ++d) {
      const auto& h = job.dir[d].clat;
      if (job.dir[d].ios == 0) continue;
      html += fmt::format(
          "<tr><td>{}.{}</td><td>{}</td><td>{:.0f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>\n",
          xml_escape(job.spec.name), job.spec.clone, dir_name(d), direction_iops(job, d),
          static_cast<double>(direction_bw_bytes(job, d)) / 1048576.0, static_cast<double>(h.percentile(50)) / 1000.0,
          static_cast<double>(h.percentile(99)) / 1000.0, static_cast<double>(h.percentile(99.9)) / 1000.0);
    }
  }
  html += "</table>\n";

  for (std::size_t i = 0; i < run.jobs.size(); ++i) {
    const auto& job = run.jobs[i];
    html += fmt::format("<h2>{} (job {}, group {})</h2>\n", xml_escape(job.spec.name), job.spec.clone, job.spec.report_group);
    const auto bw = bandwidth_chart(job);
    if (!bw.series.empty()) {
      const auto name = fmt::format("job{}_bw.svg", i + 1);
      if (auto r = write_text(dir / name, render_svg(bw)); !r) return r;
      html += fmt::format("<img src=\"{}\" alt=\"bandwidth over time\">\n", name);
    } else {
      html += "<p>No bandwidth samples (the job ran for less than one sampling window).</p>\n";
    }
    const auto cdf = latency_cdf_chart(job);
    if (!cdf.series.empty()) {
      const auto name = fmt::format("job{}_clat_cdf.svg", i + 1);
      if (auto r = write_text(dir / name, render_svg(cdf)); !r) return r;
      html += fmt::format("<img src=\"{}\" alt=\"latency CDF\">\n", name);
    }
  }
  html += "</body></html>\n";
  return write_text(dir / "index.html", html);
}

}  // namespace cxlpool::io
