// SPDX-License-Identifier: Apache-2.0
// --output-format=json / json+ in fio 3.33's layout: same keys, same units
// (bw in KiB/s, runtime in ms, latencies in ns, percentiles keyed "%f").
// Extra facts fio has no field for live under keys fio does not use
// ("cxlpool" per job, "devices" at the top), which fio's tooling ignores.
#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "output.hpp"
#include "report_model.hpp"

namespace cxlpool::io {

namespace {

using Json = nlohmann::ordered_json;

Json latency_json(const LatencyHistogram& h, const std::vector<double>* percentiles, bool plus) {
  Json j;
  j["min"] = h.min();
  j["max"] = h.max();
  j["mean"] = h.mean();
  j["stddev"] = h.stddev();
  j["N"] = h.count();
  if (h.count() == 0) return j;
  if (percentiles != nullptr && !percentiles->empty()) {
    Json p = Json::object();
    for (double q : *percentiles) p[fmt::format("{:.6f}", q)] = h.percentile(q);
    j["percentile"] = std::move(p);
  }
  if (plus) {
    Json bins = Json::object();
    for (const auto& bin : h.bins()) bins[std::to_string(bin.value_ns)] = bin.count;
    j["bins"] = std::move(bins);
  }
  return j;
}

Json direction_json(const ReportedJob& rj, int dir, std::uint64_t group_bw_bytes, bool plus) {
  const JobResult& job = rj.result;
  const DirectionStats& d = job.dir[dir];
  const auto bw_bytes = direction_bw_bytes(job, dir);
  Json j;
  j["io_bytes"] = d.io_bytes;
  j["io_kbytes"] = d.io_bytes / 1024;
  j["bw_bytes"] = bw_bytes;
  j["bw"] = bw_bytes / 1024;
  j["iops"] = direction_iops(job, dir);
  j["runtime"] = (direction_runtime_ns(job, dir) + 500'000) / 1'000'000;
  j["total_ios"] = d.ios;
  j["short_ios"] = d.short_ios;
  j["drop_ios"] = d.dropped_ios;
  // fio reports percentiles for clat only (lat_percentiles=0 default).
  j["slat_ns"] = latency_json(d.slat, nullptr, false);
  j["clat_ns"] = latency_json(d.clat, &job.spec.percentile_list, plus);
  j["lat_ns"] = latency_json(d.lat, nullptr, false);
  const auto bw = summarize(d.bw_samples_kib);
  j["bw_min"] = bw.min;
  j["bw_max"] = bw.max;
  j["bw_agg"] = group_bw_bytes ? 100.0 * static_cast<double>(bw_bytes) / static_cast<double>(group_bw_bytes) : 0.0;
  j["bw_mean"] = bw.mean;
  j["bw_dev"] = bw.stddev;
  j["bw_samples"] = bw.samples;
  const auto iops = summarize(d.iops_samples);
  j["iops_min"] = iops.min;
  j["iops_max"] = iops.max;
  j["iops_mean"] = iops.mean;
  j["iops_stddev"] = iops.stddev;
  j["iops_samples"] = iops.samples;
  return j;
}

Json empty_direction() {
  Json zero_lat = {{"min", 0}, {"max", 0}, {"mean", 0.0}, {"stddev", 0.0}, {"N", 0}};
  Json j;
  for (const char* k : {"io_bytes", "io_kbytes", "bw_bytes", "bw"}) j[k] = 0;
  j["iops"] = 0.0;
  for (const char* k : {"runtime", "total_ios", "short_ios", "drop_ios"}) j[k] = 0;
  j["slat_ns"] = zero_lat;
  j["clat_ns"] = zero_lat;
  j["lat_ns"] = zero_lat;
  for (const char* k : {"bw_min", "bw_max"}) j[k] = 0;
  for (const char* k : {"bw_agg", "bw_mean", "bw_dev"}) j[k] = 0.0;
  j["bw_samples"] = 0;
  for (const char* k : {"iops_min", "iops_max"}) j[k] = 0;
  for (const char* k : {"iops_mean", "iops_stddev"}) j[k] = 0.0;
  j["iops_samples"] = 0;
  return j;
}

// The options a job ran with, as strings the way fio echoes them.
Json job_options(const JobSpec& s) {
  Json o;
  o["name"] = s.name;
  if (!s.filenames.empty()) {
    std::string f;
    for (const auto& n : s.filenames) f += (f.empty() ? "" : ":") + n;
    o["filename"] = f;
  }
  o["rw"] = rw_mode_name(s.rw);
  o["bs"] = s.bs[0] == s.bs[1] ? std::to_string(s.bs[0]) : fmt::format("{},{}", s.bs[0], s.bs[1]);
  o["ioengine"] = s.ioengine;
  o["iodepth"] = std::to_string(s.iodepth);
  if (s.size) o["size"] = std::to_string(s.size);
  if (s.io_size) o["io_size"] = std::to_string(s.io_size);
  o["direct"] = s.direct ? "1" : "0";
  if (s.runtime_ns) o["runtime"] = fmt::format("{}ms", s.runtime_ns / 1'000'000);
  if (s.time_based) o["time_based"] = "1";
  if (s.numjobs > 1) o["numjobs"] = std::to_string(s.numjobs);
  if (s.group_reporting) o["group_reporting"] = "1";
  return o;
}

Json percent_levels(const std::uint64_t (&levels)[7], const char* const (&keys)[7]) {
  std::uint64_t total = 0;
  for (auto v : levels) total += v;
  Json j;
  for (int i = 0; i < 7; ++i)
    j[keys[i]] = total ? 100.0 * static_cast<double>(levels[i]) / static_cast<double>(total) : 0.0;
  return j;
}

Json job_json(const ReportedJob& rj, const std::vector<GroupSummary>& groups, bool plus) {
  const JobResult& job = rj.result;
  std::uint64_t group_bw[2] = {0, 0};
  for (const auto& g : groups) {
    if (g.group == job.spec.report_group) {
      group_bw[0] = static_cast<std::uint64_t>(g.agg_bw(0));
      group_bw[1] = static_cast<std::uint64_t>(g.agg_bw(1));
    }
  }
  Json j;
  j["jobname"] = job.spec.name;
  j["groupid"] = job.spec.report_group;
  j["error"] = job.error;
  j["eta"] = 0;
  j["elapsed"] = (job.runtime_ns + job.spec.ramp_time_ns + 500'000'000) / 1'000'000'000;
  j["job options"] = job_options(job.spec);
  for (int d = 0; d < 2; ++d) {
    const char* key = d == kReadDir ? "read" : "write";
    j[key] = job.dir[d].ios || job.dir[d].io_bytes ? direction_json(rj, d, group_bw[d], plus) : empty_direction();
  }
  j["trim"] = empty_direction();
  j["sync"] = {{"total_ios", 0}, {"lat_ns", {{"min", 0}, {"max", 0}, {"mean", 0.0}, {"stddev", 0.0}, {"N", 0}}}};
  j["job_runtime"] = (job.runtime_ns + 500'000) / 1'000'000;
  j["usr_cpu"] = job.usr_cpu;
  j["sys_cpu"] = job.sys_cpu;
  j["ctx"] = job.context_switches;
  j["majf"] = job.major_faults;
  j["minf"] = job.minor_faults;
  j["iodepth_level"] = percent_levels(job.iodepth_histogram, kDepthLevelKeys);
  j["iodepth_submit"] = percent_levels(job.submit_histogram, kBatchKeys);
  j["iodepth_complete"] = percent_levels(job.complete_histogram, kBatchKeys);
  const auto b = latency_buckets(job);
  Json ns, us, ms;
  for (int i = 0; i < 10; ++i) {
    ns[kLatencyBucketKeys[i]] = b.ns[i];
    us[kLatencyBucketKeys[i]] = b.us[i];
  }
  for (int i = 0; i < 12; ++i) ms[kLatencyBucketKeys[i]] = b.ms[i];
  j["latency_ns"] = std::move(ns);
  j["latency_us"] = std::move(us);
  j["latency_ms"] = std::move(ms);
  // fio's latency_target fields, its target and window in microseconds.
  j["latency_depth"] = job.latency_depth != 0 ? job.latency_depth : job.spec.iodepth;
  j["latency_target"] = job.spec.latency_target_ns / 1000;
  j["latency_percentile"] = job.spec.latency_percentile;
  j["latency_window"] = job.spec.latency_window_ns / 1000;
  Json extra;
  extra["jobs"] = rj.jobs;
  extra["helper_usr_ns"] = job.helper_user_ns;
  extra["helper_sys_ns"] = job.helper_system_ns;
  extra["verify_errors"] = job.verify_errors;
  if (!job.error_message.empty()) extra["error_message"] = job.error_message;
  j["cxlpool"] = std::move(extra);
  return j;
}

Json device_json(const DeviceInfo& d) {
  Json j;
  j["path"] = d.path;
  j["block_device"] = d.block_device;
  j["max_sectors_kb"] = d.max_sectors_kb;
  j["max_hw_sectors_kb"] = d.max_hw_sectors_kb;
  j["read_ahead_kb"] = d.read_ahead_kb;
  j["logical_block_size"] = d.logical_block_size;
  j["physical_block_size"] = d.physical_block_size;
  j["dio_mem_align"] = d.dio_mem_align;
  j["dio_offset_align"] = d.dio_offset_align;
  j["nr_requests"] = d.nr_requests;
  j["scheduler"] = d.scheduler;
  j["rotational"] = d.rotational;
  j["read_requests"] = d.reads_completed;
  j["write_requests"] = d.writes_completed;
  // Mean request size the block layer saw (sectors are 512 bytes in sysfs).
  j["avg_read_request_kb"] = d.reads_completed ? static_cast<double>(d.read_sectors) / 2.0 / static_cast<double>(d.reads_completed) : 0.0;
  j["avg_write_request_kb"] = d.writes_completed ? static_cast<double>(d.write_sectors) / 2.0 / static_cast<double>(d.writes_completed) : 0.0;
  return j;
}

}  // namespace

std::string render_json(const RunResult& run, bool plus) {
  const auto jobs = reported_jobs(run);
  const auto groups = group_summaries(jobs);
  Json root;
  root["fio version"] = run.version;
  root["timestamp"] = run.timestamp_unix;
  root["timestamp_ms"] = run.timestamp_unix * 1000;
  root["time"] = run.time_text;
  Json arr = Json::array();
  for (const auto& rj : jobs) arr.push_back(job_json(rj, groups, plus));
  root["jobs"] = std::move(arr);

  std::uint64_t longest_ns = 0;
  for (const auto& rj : jobs) longest_ns = std::max(longest_ns, rj.result.runtime_ns);
  Json disks = Json::array();
  for (const auto& d : run.devices) {
    if (d.block_device.empty()) continue;
    Json u;
    u["name"] = d.block_device;
    u["read_ios"] = d.reads_completed;
    u["write_ios"] = d.writes_completed;
    u["read_ticks"] = d.read_ticks_ms;
    u["write_ticks"] = d.write_ticks_ms;
    u["in_queue"] = d.read_ticks_ms + d.write_ticks_ms;
    const double run_ms = static_cast<double>(longest_ns) / 1e6;
    u["util"] = run_ms > 0 ? std::min(100.0, 100.0 * static_cast<double>(d.io_ticks_ms) / run_ms) : 0.0;
    disks.push_back(std::move(u));
  }
  root["disk_util"] = std::move(disks);
  Json devices = Json::array();
  for (const auto& d : run.devices) devices.push_back(device_json(d));
  root["devices"] = std::move(devices);
  return root.dump(2) + "\n";
}

}  // namespace cxlpool::io
