// SPDX-License-Identifier: Apache-2.0
// fio's ss= steady-state detection: once a second (after ss_ramp) the job's
// IOPS or bandwidth over that second joins a window of ss_dur; when the
// window is full and every sample lies within the limit of its mean (iops,
// bw) or the least-squares slope is below the limit (iops_slope,
// bw_slope), the job has reached steady state and ends.
#pragma once

#include <cstdint>
#include <deque>

#include "../job/job_spec.hpp"

namespace cxlpool::io {

class SteadyState {
 public:
  SteadyState() = default;
  explicit SteadyState(const JobSpec& job);

  bool enabled() const { return job_metric_ != SteadyMetric::kNone; }
  // `bytes` and `ios` are the job's totals (both directions) at `now_ns`;
  // `start_ns` is when statistics began. True once steady state is reached.
  bool update(std::uint64_t now_ns, std::uint64_t start_ns, std::uint64_t bytes, std::uint64_t ios);

  // The test on a full window; exposed for tests.
  static bool attained(const std::deque<double>& window, SteadyMetric metric, double limit, bool percent);

 private:
  SteadyMetric job_metric_ = SteadyMetric::kNone;
  double limit_ = 0;
  bool percent_ = false;
  std::uint64_t ramp_ns_ = 0;
  std::size_t samples_ = 0;
  std::uint64_t next_ns_ = 0;
  std::uint64_t last_bytes_ = 0, last_ios_ = 0;
  bool started_ = false;
  std::deque<double> window_;
};

}  // namespace cxlpool::io
