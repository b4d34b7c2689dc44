// SPDX-License-Identifier: Apache-2.0
#include "report_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace cxlpool::io {

const char* const kLatencyBucketKeys[12] = {"2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"};
const char* const kDepthLevelKeys[7] = {"1", "2", "4", "8", "16", "32", ">=64"};
const char* const kBatchKeys[7] = {"0", "4", "8", "16", "32", "64", ">=64"};

namespace {

void merge_direction(DirectionStats& into, const DirectionStats& from) {
  into.io_bytes += from.io_bytes;
  into.ios += from.ios;
  into.short_ios += from.short_ios;
  into.dropped_ios += from.dropped_ios;
  into.errors += from.errors;
  into.runtime_ns = std::max(into.runtime_ns, from.runtime_ns);
  into.slat.merge(from.slat);
  into.clat.merge(from.clat);
  into.lat.merge(from.lat);
  into.bw_samples_kib.insert(into.bw_samples_kib.end(), from.bw_samples_kib.begin(), from.bw_samples_kib.end());
  into.iops_samples.insert(into.iops_samples.end(), from.iops_samples.begin(), from.iops_samples.end());
}

void merge_job(ReportedJob& into, const JobResult& from) {
  JobResult& to = into.result;
  const double t_into = static_cast<double>(to.runtime_ns);
  const double t_from = static_cast<double>(from.runtime_ns);
  if (t_into + t_from > 0) {
    to.usr_cpu = (to.usr_cpu * t_into + from.usr_cpu * t_from) / (t_into + t_from);
    to.sys_cpu = (to.sys_cpu * t_into + from.sys_cpu * t_from) / (t_into + t_from);
  }
  to.runtime_ns = std::max(to.runtime_ns, from.runtime_ns);
  if (to.error == 0 && from.error != 0) {
    to.error = from.error;
    to.error_message = from.error_message;
  }
  to.start_unix_ms = std::min(to.start_unix_ms, from.start_unix_ms);
  for (int d = 0; d < 2; ++d) merge_direction(to.dir[d], from.dir[d]);
  to.context_switches += from.context_switches;
  to.major_faults += from.major_faults;
  to.minor_faults += from.minor_faults;
  to.helper_user_ns += from.helper_user_ns;
  to.helper_system_ns += from.helper_system_ns;
  for (int i = 0; i < 7; ++i) {
    to.iodepth_histogram[i] += from.iodepth_histogram[i];
    to.submit_histogram[i] += from.submit_histogram[i];
    to.complete_histogram[i] += from.complete_histogram[i];
  }
  to.verify_errors += from.verify_errors;
  ++into.jobs;
}

}  // namespace

std::vector<ReportedJob> reported_jobs(const RunResult& run) {
  std::vector<ReportedJob> out;
  std::map<int, std::size_t> merged_slot;  // group -> index in out
  for (const auto& job : run.jobs) {
    if (job.spec.group_reporting) {
      auto it = merged_slot.find(job.spec.report_group);
      if (it != merged_slot.end()) {
        merge_job(out[it->second], job);
        continue;
      }
      merged_slot[job.spec.report_group] = out.size();
    }
    out.push_back(ReportedJob{job, 1});
  }
  return out;
}

std::uint64_t direction_runtime_ns(const JobResult& job, int dir) {
  const auto& d = job.dir[dir];
  if (d.ios == 0) return 0;
  return d.runtime_ns ? d.runtime_ns : job.runtime_ns;
}

double direction_iops(const JobResult& job, int dir) {
  const auto t = direction_runtime_ns(job, dir);
  return t ? static_cast<double>(job.dir[dir].ios) * 1e9 / static_cast<double>(t) : 0.0;
}

std::uint64_t direction_bw_bytes(const JobResult& job, int dir) {
  const auto t = direction_runtime_ns(job, dir);
  if (t == 0) return 0;
  return static_cast<std::uint64_t>(static_cast<long double>(job.dir[dir].io_bytes) * 1e9L / static_cast<long double>(t));
}

SampleSummary summarize(const std::vector<std::uint64_t>& samples) {
  SampleSummary s;
  if (samples.empty()) return s;
  s.samples = samples.size();
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  double sum = 0;
  for (auto v : samples) sum += static_cast<double>(v);
  s.mean = sum / static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double sq = 0;
    for (auto v : samples) sq += (static_cast<double>(v) - s.mean) * (static_cast<double>(v) - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(samples.size() - 1));
  }
  return s;
}

double GroupSummary::agg_bw(int dir) const {
  return max_runtime_ns[dir] ? static_cast<double>(io_bytes[dir]) * 1e9 / static_cast<double>(max_runtime_ns[dir]) : 0.0;
}

std::vector<GroupSummary> group_summaries(const std::vector<ReportedJob>& jobs) {
  std::map<int, GroupSummary> by_group;
  for (const auto& rj : jobs) {
    const auto& j = rj.result;
    auto& g = by_group[j.spec.report_group];
    g.group = j.spec.report_group;
    for (int d = 0; d < 2; ++d) {
      if (j.dir[d].ios == 0) continue;
      const auto t = direction_runtime_ns(j, d);
      const auto bw = direction_bw_bytes(j, d);
      const bool first = g.io_bytes[d] == 0 && g.max_runtime_ns[d] == 0;
      g.io_bytes[d] += j.dir[d].io_bytes;
      g.max_runtime_ns[d] = std::max(g.max_runtime_ns[d], t);
      g.min_runtime_ns[d] = first ? t : std::min(g.min_runtime_ns[d], t);
      g.min_bw[d] = first ? bw : std::min(g.min_bw[d], bw);
      g.max_bw[d] = std::max(g.max_bw[d], bw);
    }
  }
  std::vector<GroupSummary> out;
  for (auto& [_, g] : by_group) out.push_back(g);
  return out;
}

LatencyBuckets latency_buckets(const JobResult& job) {
  static constexpr std::uint64_t kBounds[10] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000};
  LatencyBuckets b;
  std::uint64_t total = 0;
  std::uint64_t ns[10] = {}, us[10] = {}, ms[12] = {};
  auto place = [](std::uint64_t v, std::uint64_t* counts, std::uint64_t n) {
    for (int i = 0; i < 10; ++i) {
      if (v < kBounds[i]) {
        counts[i] += n;
        return;
      }
    }
  };
  for (int d = 0; d < 2; ++d) {
    // fio buckets the total latency of every completion.
    const auto& h = job.dir[d].lat.count() ? job.dir[d].lat : job.dir[d].clat;
    for (const auto& bin : h.bins()) {
      total += bin.count;
      const auto v = bin.value_ns;
      if (v < 1000) {
        place(v, ns, bin.count);
      } else if (v < 1'000'000) {
        place(v / 1000, us, bin.count);
      } else if (v < 1'000'000'000) {
        place(v / 1'000'000, ms, bin.count);
      } else if (v < 2'000'000'000) {
        ms[10] += bin.count;
      } else {
        ms[11] += bin.count;
      }
    }
  }
  if (total == 0) return b;
  const double t = static_cast<double>(total);
  for (int i = 0; i < 10; ++i) {
    b.ns[i] = 100.0 * static_cast<double>(ns[i]) / t;
    b.us[i] = 100.0 * static_cast<double>(us[i]) / t;
  }
  for (int i = 0; i < 12; ++i) b.ms[i] = 100.0 * static_cast<double>(ms[i]) / t;
  return b;
}

}  // namespace cxlpool::io
