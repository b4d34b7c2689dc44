// SPDX-License-Identifier: Apache-2.0
// Turns a job's completions into its JobResult: latency histograms, byte and
// I/O counts, the bw/iops samples of the summary (fio's 500 ms windows, or
// log_avg_msec), and the logs the job asked for. record() allocates only when
// a log grows or a window closes.
#pragma once

#include <cstdint>

#include "../stats/run_result.hpp"

namespace cxlpool::io {

class JobRecorder {
 public:
  JobRecorder(JobResult& result, bool collect_logs);

  // Statistics start (again) at `now_ns`: what came before (ramp_time) is
  // forgotten.
  void start(std::uint64_t now_ns);
  std::uint64_t started_ns() const { return start_ns_; }

  struct Completion {
    int direction = kReadDir;
    std::uint32_t bytes = 0;     // transferred
    std::uint32_t requested = 0; // asked for
    std::uint64_t offset = 0;
    std::uint64_t slat_ns = 0;
    std::uint64_t clat_ns = 0;
    std::uint64_t lat_ns = 0;
    bool has_slat = true;        // synchronous engines have no submission latency
    bool has_lat = true;         // false under gtod_reduce: bytes and I/Os only
    std::uint16_t priority = 0;  // the logs' priority column (log_prio)
  };
  void record(const Completion& c, std::uint64_t now_ns);
  void record_error(int direction);

  // Closes the sample windows that ended by `now_ns`; cheap when none did.
  void tick(std::uint64_t now_ns) {
    if (now_ns >= next_window_ns_) close_windows(now_ns);
  }
  // Final window and runtimes.
  void finish(std::uint64_t now_ns);

 private:
  struct Window {
    std::uint64_t bytes = 0;
    std::uint64_t ios = 0;
    std::uint64_t lat_sum = 0, slat_sum = 0, clat_sum = 0;
    std::uint32_t last_bs = 0;
  };
  void close_windows(std::uint64_t now_ns);
  void close_hist_window(std::uint64_t end_ns);
  void emit_window(int d, std::uint64_t end_ns, std::uint64_t length_ns);

  JobResult& r_;
  bool logs_;
  bool raw_logs_;            // log_avg_msec == 0: one log entry per I/O
  bool active_[2];           // directions the job does
  std::uint64_t start_ns_ = 0;
  std::uint64_t window_ns_;  // summary samples and averaged logs
  std::uint64_t window_start_ns_ = 0;
  std::uint64_t next_window_ns_ = ~0ull;
  Window win_[2];
  std::uint64_t hist_window_ns_ = 0;  // 0: no histogram log
  std::uint64_t next_hist_ns_ = ~0ull;
  LatencyHistogram hist_[2];
  std::uint64_t hist_count_[2] = {0, 0};
  std::uint32_t hist_bs_[2] = {0, 0};
};

}  // namespace cxlpool::io
