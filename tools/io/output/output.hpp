// SPDX-License-Identifier: Apache-2.0
// Rendering a RunResult the way fio does, so fio's tooling reads ours:
// the human summary, --output-format=json / json+ (fio's field names and
// units), fio-format latency/bandwidth/histogram logs, and charts.
#pragma once

#include <filesystem>
#include <string>

#include "../stats/run_result.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

std::string render_human(const RunResult& run);

// fio 3.x JSON: "fio version", "timestamp", "jobs"[] with "jobname",
// "groupid", "error", "read"/"write"/"trim" {io_bytes, io_kbytes, bw_bytes,
// bw (KiB/s), iops, runtime (ms), total_ios, short_ios, drop_ios, slat_ns,
// clat_ns, lat_ns {min, max, mean, stddev, N, percentile {"99.000000": ns}},
// bw_min, bw_max, bw_agg, bw_mean, bw_dev, bw_samples, iops_min, ...},
// "usr_cpu", "sys_cpu", "ctx", "majf", "minf", "iodepth_level", "latency_ns",
// ...; "disk_util"[]. `plus` adds clat_ns "bins" (json+). group_reporting
// jobs are merged per group as fio does.
std::string render_json(const RunResult& run, bool plus);

// fio-format logs for the jobs that asked (write_lat_log etc.):
// "<prefix>_lat.<n>.log", "<prefix>_clat.<n>.log", "<prefix>_slat.<n>.log",
// "<prefix>_bw.<n>.log", "<prefix>_iops.<n>.log", "<prefix>_clat_hist.<n>.log",
// lines "time, value, direction, block size, offset". Relative prefixes are
// relative to `dir`.
Result<void> write_logs(const RunResult& run, const std::filesystem::path& dir);

// --plot DIR: SVG charts (bandwidth over time per job, latency CDF per job
// and direction) plus an index.html; no external tool needed.
Result<void> write_plots(const RunResult& run, const std::filesystem::path& dir);

// The queue limits and block-layer facts of the device that holds `path`
// (sysfs under `sysfs_root`, default "/sys"); fields stay 0 when unreadable.
DeviceInfo probe_device(const std::string& path, const std::string& sysfs_root = "/sys");
// /proc/diskstats deltas between two probes, for the request sizes seen.
void add_diskstats_delta(DeviceInfo& info, const DeviceInfo& before);

}  // namespace cxlpool::io
