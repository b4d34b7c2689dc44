// SPDX-License-Identifier: Apache-2.0
// What a run produced: per job clone, per direction. The runner fills it;
// the output writers (output/) render it as fio does (human, json, json+,
// logs, plots). Units are the raw ones; writers convert (KiB/s, ms, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../job/job_spec.hpp"
#include "latency_histogram.hpp"

namespace cxlpool::io {

// One averaging window of a bandwidth/IOPS/latency log (log_avg_msec), or
// one raw completion when log_avg_msec is 0.
struct LogSample {
  std::uint64_t time_ms = 0;     // since the job started
  std::uint64_t value = 0;       // KiB/s for bw, IOPS for iops, ns for lat
  int direction = kReadDir;
  std::uint32_t block_size = 0;
  std::uint64_t offset = 0;      // raw samples only
  std::uint16_t priority = 0;    // raw samples only: fio's priority column
};

// Per-window histogram for write_hist_log (log_hist_msec).
struct HistogramSample {
  std::uint64_t time_ms = 0;
  int direction = kReadDir;
  std::uint32_t block_size = 0;
  LatencyHistogram histogram;
};

struct DirectionStats {
  std::uint64_t io_bytes = 0;   // after ramp_time
  std::uint64_t ios = 0;
  std::uint64_t short_ios = 0;
  std::uint64_t dropped_ios = 0;
  std::uint64_t errors = 0;
  std::uint64_t runtime_ns = 0; // time this direction was active
  LatencyHistogram slat;        // submission latency
  LatencyHistogram clat;        // completion latency (submit -> complete)
  LatencyHistogram lat;         // total
  // Per-second (or per-log_avg_msec) samples for bw/iops min/max/mean/stddev
  // in the summary.
  std::vector<std::uint64_t> bw_samples_kib;
  std::vector<std::uint64_t> iops_samples;
};

struct JobResult {
  JobSpec spec;
  int error = 0;               // errno of a failed job, 0 when fine
  std::string error_message;
  std::uint64_t start_unix_ms = 0;
  std::uint64_t runtime_ns = 0;     // wall time after ramp
  DirectionStats dir[2];            // kReadDir, kWriteDir
  double usr_cpu = 0;               // percent of runtime, like fio (thread + helper threads)
  double sys_cpu = 0;
  std::uint64_t context_switches = 0;
  std::uint64_t major_faults = 0;
  std::uint64_t minor_faults = 0;
  std::uint64_t helper_user_ns = 0;    // included in usr/sys above (SQPOLL thread)
  std::uint64_t helper_system_ns = 0;
  std::uint64_t iodepth_histogram[7] = {};  // fio's buckets 1,2,4,8,16,32,>=64 (submitted in flight)
  // Calls, by requests per call, in fio's buckets 0,1-4,5-8,9-16,17-32,33-64,>64.
  std::uint64_t submit_histogram[7] = {};
  std::uint64_t complete_histogram[7] = {};
  std::uint64_t verify_errors = 0;
  std::uint32_t latency_depth = 0;  // latency_target: the depth found (else iodepth)
  std::vector<LogSample> bw_log, iops_log, lat_log, slat_log, clat_log;
  std::vector<HistogramSample> hist_log;
};

// Device facts recorded with the results (output "disk_util" plus our
// "device" object): what the block layer says about the job's target.
struct DeviceInfo {
  std::string path;             // the file
  std::string block_device;     // e.g. "vda" (the device holding the file), "" if unknown
  std::uint32_t max_sectors_kb = 0;
  std::uint32_t max_hw_sectors_kb = 0;
  std::uint32_t read_ahead_kb = 0;
  std::uint32_t logical_block_size = 0;
  std::uint32_t physical_block_size = 0;
  std::uint32_t dio_mem_align = 0;
  std::uint32_t dio_offset_align = 0;
  std::uint32_t nr_requests = 0;
  std::string scheduler;
  bool rotational = false;
  // Block-layer request sizes seen while the run lasted (from /proc/diskstats
  // deltas: sectors / requests), 0 when unreadable.
  std::uint64_t reads_completed = 0, writes_completed = 0;
  std::uint64_t read_sectors = 0, write_sectors = 0;
  std::uint64_t read_ticks_ms = 0, write_ticks_ms = 0, io_ticks_ms = 0;
};

struct RunResult {
  std::string version = "cxlpool-io";  // "fio version" field value
  std::uint64_t timestamp_unix = 0;
  std::string time_text;               // ctime-like, as fio's "time"
  std::vector<JobResult> jobs;         // in start order; group_reporting merges at output time
  std::vector<DeviceInfo> devices;
};

}  // namespace cxlpool::io
