// SPDX-License-Identifier: Apache-2.0
// A RunResult with known figures, for the output writers' tests.
#pragma once

#include <string>

#include "stats/run_result.hpp"

namespace cxlpool::io::testing {

// One job, `ios` reads of 4 KiB over `runtime_ms`, clat values 10us..(10+ios)us.
inline JobResult make_read_job(const std::string& name, int group, std::uint64_t ios, std::uint64_t runtime_ms) {
  JobResult j;
  j.spec.name = name;
  j.spec.group = group;
  j.spec.report_group = group;
  j.spec.rw = RwMode::kRandRead;
  j.spec.ioengine = "io_uring";
  j.spec.iodepth = 32;
  j.spec.filenames = {"/var/tmp/x.dat"};
  j.runtime_ns = runtime_ms * 1'000'000;
  auto& d = j.dir[kReadDir];
  d.ios = ios;
  d.io_bytes = ios * 4096;
  d.runtime_ns = j.runtime_ns;
  for (std::uint64_t i = 0; i < ios; ++i) {
    d.slat.record(1000 + i % 100);
    d.clat.record(10'000 + i * 1000 % 1'000'000);
    d.lat.record(11'000 + i * 1000 % 1'000'000);
  }
  d.bw_samples_kib = {100, 200, 300};
  d.iops_samples = {25, 50, 75};
  j.usr_cpu = 10;
  j.sys_cpu = 30;
  j.context_switches = 123;
  j.minor_faults = 7;
  j.iodepth_histogram[5] = ios;
  return j;
}

inline RunResult make_run() {
  RunResult r;
  r.timestamp_unix = 1700000000;
  r.time_text = "Tue Nov 14 22:13:20 2023";
  r.jobs.push_back(make_read_job("a", 0, 1000, 500));
  return r;
}

}  // namespace cxlpool::io::testing
