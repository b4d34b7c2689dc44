// SPDX-License-Identifier: Apache-2.0
// The human summary, laid out like fio's so people who read fio output read
// ours: per job the IOPS/BW line, slat/clat/lat, clat percentiles, bw/iops
// sample stats, latency buckets, cpu, depths; then the group status lines
// and the disk stats. cxlpool-io adds the device's queue limits and the
// helper-thread CPU that fio leaves out.
#include <fmt/format.h>

#include <string>

#include "fio_units.hpp"
#include "output.hpp"
#include "report_model.hpp"

namespace cxlpool::io {

namespace {

std::string bw_text(double bytes_per_s) {
  const auto v = static_cast<std::uint64_t>(bytes_per_s);
  return fmt::format("{}B/s ({}B/s)", scaled_number(v, 4, UnitBase::kBinary), scaled_number(v, 4, UnitBase::kDecimal));
}

void latency_line(std::string& out, const char* label, const LatencyHistogram& h) {
  if (h.count() == 0) return;
  const auto unit = latency_unit_for(h.min(), h.max());
  auto fmt_v = [&](double ns) {
    const double v = ns / unit.divisor;
    return unit.divisor == 1.0 ? fmt::format("{:.0f}", v) : fmt::format("{:.0f}", v);
  };
  out += fmt::format("    {:>4} ({}): min={}, max={}, avg={:.2f}, stdev={:.2f}\n", label, unit.name,
                     fmt_v(static_cast<double>(h.min())), fmt_v(static_cast<double>(h.max())),
                     h.mean() / unit.divisor, h.stddev() / unit.divisor);
}

void percentile_block(std::string& out, const LatencyHistogram& h, const std::vector<double>& list) {
  if (h.count() == 0 || list.empty()) return;
  std::uint64_t top = 0;
  for (double p : list) top = std::max(top, h.percentile(p));
  const auto unit = latency_unit_for(h.percentile(list.front()), top);
  out += fmt::format("    clat percentiles ({}):\n", unit.name);
  std::string line;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto v = static_cast<std::uint64_t>(static_cast<double>(h.percentile(list[i])) / unit.divisor + 0.5);
    line += fmt::format("{}{:5.2f}th=[{:5}]", i % 4 == 0 ? "     | " : " ", list[i], v);
    if (i % 4 == 3 || i + 1 == list.size()) {
      out += line + (i + 1 == list.size() ? "\n" : ",\n");
      line.clear();
    } else {
      line += ",";
    }
  }
  out += "     |\n";
}

void sample_lines(std::string& out, const DirectionStats& d, double group_bw_kib) {
  const auto bw = summarize(d.bw_samples_kib);
  if (bw.samples) {
    const double per = group_bw_kib > 0 ? 100.0 * bw.mean / group_bw_kib : 0.0;
    out += fmt::format("   bw (  KiB/s): min={:6}, max={:6}, per={:.2f}%, avg={:.2f}, stdev={:.2f}, samples={}\n",
                       bw.min, bw.max, per, bw.mean, bw.stddev, bw.samples);
  }
  const auto iops = summarize(d.iops_samples);
  if (iops.samples) {
    out += fmt::format("   iops        : min={:6}, max={:6}, avg={:.2f}, stdev={:.2f}, samples={}\n", iops.min,
                       iops.max, iops.mean, iops.stddev, iops.samples);
  }
}

void latency_bucket_lines(std::string& out, const JobResult& job) {
  const auto b = latency_buckets(job);
  auto emit = [&](const char* unit, const double* shares, int n) {
    std::string items;
    for (int i = 0; i < n; ++i) {
      if (shares[i] < 0.01) continue;
      items += fmt::format("{}{}={:.2f}%", items.empty() ? "" : ", ", kLatencyBucketKeys[i], shares[i]);
    }
    if (!items.empty()) out += fmt::format("  lat ({})   : {}\n", unit, items);
  };
  emit("nsec", b.ns, 10);
  emit("usec", b.us, 10);
  emit("msec", b.ms, 12);
}

// One fio "IO depths" / "submit" / "complete" line: percent per bucket.
void depth_line(std::string& out, const char* label, const std::uint64_t (&counts)[7], const char* const (&keys)[7]) {
  std::uint64_t total = 0;
  for (auto v : counts) total += v;
  if (total == 0) return;
  std::string items;
  for (int i = 0; i < 7; ++i)
    items += fmt::format("{}{}={:.1f}%", i ? ", " : "", keys[i],
                         100.0 * static_cast<double>(counts[i]) / static_cast<double>(total));
  out += fmt::format("{}{}\n", label, items);
}

void job_block(std::string& out, const ReportedJob& rj, const std::vector<GroupSummary>& groups, const RunResult& run) {
  const JobResult& job = rj.result;
  out += fmt::format("{}: (groupid={}, jobs={}): err={:2}: {}\n", job.spec.name, job.spec.report_group, rj.jobs, job.error,
                     run.time_text);
  if (!job.error_message.empty()) out += fmt::format("  error: {}\n", job.error_message);
  for (int d = 0; d < 2; ++d) {
    const auto& ds = job.dir[d];
    if (ds.ios == 0) continue;
    const auto t_ns = direction_runtime_ns(job, d);
    out += fmt::format("  {}: IOPS={}, BW={}({}B/{}msec)\n", d == kReadDir ? "read" : "write",
                       scaled_number(static_cast<std::uint64_t>(direction_iops(job, d)), 4, UnitBase::kDecimal),
                       bw_text(static_cast<double>(direction_bw_bytes(job, d))),
                       scaled_number(ds.io_bytes, 4, UnitBase::kBinary), (t_ns + 500'000) / 1'000'000);
    latency_line(out, "slat", ds.slat);
    latency_line(out, "clat", ds.clat);
    latency_line(out, "lat", ds.lat);
    percentile_block(out, ds.clat, job.spec.percentile_list);
    double group_kib = 0;
    for (const auto& g : groups)
      if (g.group == job.spec.report_group) group_kib = g.agg_bw(d) / 1024.0;
    sample_lines(out, ds, group_kib);
  }
  latency_bucket_lines(out, job);
  out += fmt::format("  cpu          : usr={:.2f}%, sys={:.2f}%, ctx={}, majf={}, minf={}\n", job.usr_cpu, job.sys_cpu,
                     job.context_switches, job.major_faults, job.minor_faults);
  if (job.helper_user_ns || job.helper_system_ns) {
    out += fmt::format("  helper cpu   : usr={:.3f}ms, sys={:.3f}ms (SQPOLL thread, included above)\n",
                       static_cast<double>(job.helper_user_ns) / 1e6, static_cast<double>(job.helper_system_ns) / 1e6);
  }
  depth_line(out, "  IO depths    : ", job.iodepth_histogram, kDepthLevelKeys);
  depth_line(out, "     submit    : ", job.submit_histogram, kBatchKeys);
  depth_line(out, "     complete  : ", job.complete_histogram, kBatchKeys);
  out += fmt::format("     issued rwts: total={},{},0,0 short={},{},0,0 dropped={},{},0,0\n", job.dir[0].ios,
                     job.dir[1].ios, job.dir[0].short_ios, job.dir[1].short_ios, job.dir[0].dropped_ios,
                     job.dir[1].dropped_ios);
  if (job.spec.verify != VerifyMode::kNone) out += fmt::format("  verify       : crc32c, errors={}\n", job.verify_errors);
  if (job.spec.latency_target_ns != 0)
    out += fmt::format("  latency      : target={}us, window={}us, percentile={:.2f}%, depth={}\n",
                       job.spec.latency_target_ns / 1000, job.spec.latency_window_ns / 1000,
                       job.spec.latency_percentile, job.latency_depth);
  out += "\n";
}

}  // namespace

std::string render_human(const RunResult& run) {
  const auto jobs = reported_jobs(run);
  const auto groups = group_summaries(jobs);
  std::string out;
  for (const auto& rj : jobs) job_block(out, rj, groups, run);

  for (const auto& g : groups) {
    out += fmt::format("Run status group {} (all jobs):\n", g.group);
    for (int d = 0; d < 2; ++d) {
      if (g.max_runtime_ns[d] == 0) continue;
      const auto agg = static_cast<std::uint64_t>(g.agg_bw(d));
      out += fmt::format("  {:>5}: bw={}B/s ({}B/s), {}B/s-{}B/s ({}B/s-{}B/s), io={}B ({}B), run={}-{}msec\n",
                         d == kReadDir ? "READ" : "WRITE", scaled_number(agg, 4, UnitBase::kBinary),
                         scaled_number(agg, 4, UnitBase::kDecimal), scaled_number(g.min_bw[d], 4, UnitBase::kBinary),
                         scaled_number(g.max_bw[d], 4, UnitBase::kBinary), scaled_number(g.min_bw[d], 4, UnitBase::kDecimal),
                         scaled_number(g.max_bw[d], 4, UnitBase::kDecimal),
                         scaled_number(g.io_bytes[d], 4, UnitBase::kBinary), scaled_number(g.io_bytes[d], 4, UnitBase::kDecimal),
                         (g.min_runtime_ns[d] + 500'000) / 1'000'000, (g.max_runtime_ns[d] + 500'000) / 1'000'000);
    }
    out += "\n";
  }

  bool any_disk = false;
  for (const auto& d : run.devices) {
    if (d.block_device.empty()) continue;
    if (!any_disk) out += "Disk stats (read/write):\n";
    any_disk = true;
    out += fmt::format("  {}: ios={}/{}, sectors={}/{}, ticks={}/{}, io_ticks={}\n", d.block_device, d.reads_completed,
                       d.writes_completed, d.read_sectors, d.write_sectors, d.read_ticks_ms, d.write_ticks_ms,
                       d.io_ticks_ms);
  }
  for (const auto& d : run.devices) {
    if (d.block_device.empty()) continue;
    out += fmt::format(
        "  {} queue: max_sectors_kb={}, max_hw_sectors_kb={}, read_ahead_kb={}, logical_block_size={}, "
        "physical_block_size={}, dio_align=mem {}/offset {}, nr_requests={}, scheduler={}, rotational={}\n",
        d.block_device, d.max_sectors_kb, d.max_hw_sectors_kb, d.read_ahead_kb, d.logical_block_size,
        d.physical_block_size, d.dio_mem_align, d.dio_offset_align, d.nr_requests,
        d.scheduler.empty() ? "?" : d.scheduler, d.rotational ? 1 : 0);
    if (d.reads_completed)
      out += fmt::format("  {} mean read request: {:.1f} KiB\n", d.block_device,
                         static_cast<double>(d.read_sectors) / 2.0 / static_cast<double>(d.reads_completed));
    if (d.writes_completed)
      out += fmt::format("  {} mean write request: {:.1f} KiB\n", d.block_device,
                         static_cast<double>(d.write_sectors) / 2.0 / static_cast<double>(d.writes_completed));
  }
  return out;
}

}  // namespace cxlpool::io
