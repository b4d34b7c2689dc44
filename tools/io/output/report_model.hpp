// SPDX-License-Identifier: Apache-2.0
// What the writers report, derived from a RunResult: jobs merged per group
// where group_reporting asks for it (fio's rules: sums of bytes and I/Os,
// the longest runtime, merged histograms, CPU weighted by runtime), plus the
// derived rates every writer prints the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "../stats/run_result.hpp"

namespace cxlpool::io {

struct ReportedJob {
  JobResult result;          // merged when jobs > 1
  std::uint32_t jobs = 1;    // how many job clones it stands for
};

std::vector<ReportedJob> reported_jobs(const RunResult& run);

// Runtime of a direction in ns: its own when the runner measured it, the
// job's otherwise.
std::uint64_t direction_runtime_ns(const JobResult& job, int dir);
double direction_iops(const JobResult& job, int dir);
std::uint64_t direction_bw_bytes(const JobResult& job, int dir);  // bytes/s

struct SampleSummary {
  std::uint64_t min = 0, max = 0;
  double mean = 0, stddev = 0;
  std::uint64_t samples = 0;
};
SampleSummary summarize(const std::vector<std::uint64_t>& samples);

// Per group: the "Run status group" line's figures.
struct GroupSummary {
  int group = 0;
  std::uint64_t io_bytes[2] = {0, 0};
  std::uint64_t max_runtime_ns[2] = {0, 0};
  std::uint64_t min_runtime_ns[2] = {0, 0};
  std::uint64_t min_bw[2] = {0, 0}, max_bw[2] = {0, 0};  // bytes/s over jobs
  double agg_bw(int dir) const;                            // bytes/s
};
std::vector<GroupSummary> group_summaries(const std::vector<ReportedJob>& jobs);

// fio's "latency_ns/us/ms" buckets: share (percent) of all completions whose
// total latency falls in each range, keyed as fio keys them.
struct LatencyBuckets {
  double ns[10] = {};   // 2,4,10,20,50,100,250,500,750,1000
  double us[10] = {};
  double ms[12] = {};   // ... 1000, 2000, >=2000
};
LatencyBuckets latency_buckets(const JobResult& job);
extern const char* const kLatencyBucketKeys[12];
// fio's keys for iodepth_level (in flight at submit) and for
// iodepth_submit / iodepth_complete (requests per call).
extern const char* const kDepthLevelKeys[7];
extern const char* const kBatchKeys[7];

}  // namespace cxlpool::io
