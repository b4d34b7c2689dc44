// SPDX-License-Identifier: Apache-2.0
// fio's latency_target mode: find the highest queue depth at which the
// job's I/O still meets a latency target. The job starts at depth 1; after
// every latency_window the share of that window's I/Os whose total latency
// was within latency_target is compared with latency_percentile, and a
// binary search between the highest depth that met it and the lowest that
// did not picks the next depth (doubling until the first miss). Once the two meet, the search is over and
// the job ends (fio's default latency_run=0), reporting that depth.
#pragma once

#include <cstdint>

namespace cxlpool::io {

class DepthSearch {
 public:
  // target/window in ns; percentile in (0, 100]; max_depth = iodepth.
  DepthSearch(std::uint64_t target_ns, std::uint64_t window_ns, double percentile, std::uint32_t max_depth);

  // The depth the job may run at now.
  std::uint32_t depth() const { return depth_; }
  // True once the highest depth meeting the target is found (depth() is it).
  bool done() const { return done_; }

  // A completion with total latency `lat_ns` at `now_ns`; may close the
  // window and move the depth.
  void record(std::uint64_t lat_ns, std::uint64_t now_ns);
  // Starts a window at `now_ns` (after ramp_time, say).
  void restart(std::uint64_t now_ns);

 private:
  void judge(bool met);

  std::uint64_t target_ns_;
  std::uint64_t window_ns_;
  double percentile_;
  std::uint32_t low_ = 1;    // the highest depth known to meet the target (1 when none is)
  std::uint32_t high_;       // the highest depth not known to miss it
  std::uint32_t depth_ = 1;
  bool missed_ = false;      // some depth has missed the target: bisect
  bool done_ = false;
  std::uint64_t window_start_ = 0;
  std::uint64_t ios_ = 0;
  std::uint64_t within_ = 0;
};

}  // namespace cxlpool::io
