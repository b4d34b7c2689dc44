// SPDX-License-Identifier: Apache-2.0
#include "job_recorder.hpp"

#include <algorithm>

namespace cxlpool::io {
namespace {

// fio's bw_avg_time / iops_avg_time default.
constexpr std::uint64_t kDefaultWindowNs = 500'000'000ull;
constexpr std::uint64_t kDefaultHistWindowNs = 1'000'000'000ull;
constexpr std::uint64_t kNsPerMs = 1'000'000ull;

}  // namespace

JobRecorder::JobRecorder(JobResult& result, bool collect_logs)
    : r_(result),
      logs_(collect_logs),
      raw_logs_(result.spec.log_avg_msec == 0),
      active_{does_reads(result.spec.rw) || result.spec.verify != VerifyMode::kNone, does_writes(result.spec.rw)},
      window_ns_(result.spec.log_avg_msec ? result.spec.log_avg_msec * kNsPerMs : kDefaultWindowNs) {
  if (logs_ && !r_.spec.write_hist_log.empty()) {
    const JobSpec& s = r_.spec;
    hist_window_ns_ = s.log_hist_msec ? s.log_hist_msec * kNsPerMs
                                      : (s.log_avg_msec ? s.log_avg_msec * kNsPerMs : kDefaultHistWindowNs);
  }
}

void JobRecorder::start(std::uint64_t now_ns) {
  for (DirectionStats& d : r_.dir) d = DirectionStats{};
  r_.bw_log.clear();
  r_.iops_log.clear();
  r_.lat_log.clear();
  r_.slat_log.clear();
  r_.clat_log.clear();
  r_.hist_log.clear();
  for (auto& h : r_.iodepth_histogram) h = 0;
  for (auto& h : r_.submit_histogram) h = 0;
  for (auto& h : r_.complete_histogram) h = 0;
  r_.verify_errors = 0;
  start_ns_ = window_start_ns_ = now_ns;
  next_window_ns_ = now_ns + window_ns_;
  win_[0] = win_[1] = Window{};
  if (hist_window_ns_) {
    next_hist_ns_ = now_ns + hist_window_ns_;
    hist_[0].clear();
    hist_[1].clear();
    hist_count_[0] = hist_count_[1] = 0;
  }
}

void JobRecorder::record(const Completion& c, std::uint64_t now_ns) {
  DirectionStats& d = r_.dir[c.direction];
  d.io_bytes += c.bytes;
  ++d.ios;
  if (c.bytes < c.requested) ++d.short_ios;
  if (c.has_lat) {
    if (c.has_slat) d.slat.record(c.slat_ns);
    d.clat.record(c.clat_ns);
    d.lat.record(c.lat_ns);
  }
  Window& w = win_[c.direction];
  w.bytes += c.bytes;
  ++w.ios;
  w.lat_sum += c.lat_ns;
  w.slat_sum += c.slat_ns;
  w.clat_sum += c.clat_ns;
  w.last_bs = c.requested;
  if (hist_window_ns_ && c.has_lat) {
    hist_[c.direction].record(c.clat_ns);
    ++hist_count_[c.direction];
    hist_bs_[c.direction] = c.requested;
  }
  if (logs_ && raw_logs_) {
    const std::uint64_t t = (now_ns - start_ns_) / kNsPerMs;
    const JobSpec& s = r_.spec;
    if (!s.write_lat_log.empty() && c.has_lat) {
      r_.lat_log.push_back({t, c.lat_ns, c.direction, c.requested, c.offset, c.priority});
      r_.clat_log.push_back({t, c.clat_ns, c.direction, c.requested, c.offset, c.priority});
      if (c.has_slat) r_.slat_log.push_back({t, c.slat_ns, c.direction, c.requested, c.offset, c.priority});
    }
    // Per I/O, fio logs the bandwidth that one I/O achieved and an IOPS of 1.
    if (!s.write_bw_log.empty() && c.lat_ns != 0)
      r_.bw_log.push_back(
          {t, c.bytes * 1'000'000'000ull / 1024 / c.lat_ns, c.direction, c.requested, c.offset, c.priority});
    if (!s.write_iops_log.empty()) r_.iops_log.push_back({t, 1, c.direction, c.requested, c.offset, c.priority});
  }
  tick(now_ns);
}

void JobRecorder::record_error(int direction) { ++r_.dir[direction].errors; }

void JobRecorder::emit_window(int d, std::uint64_t end_ns, std::uint64_t length_ns) {
  Window& w = win_[d];
  DirectionStats& ds = r_.dir[d];
  const std::uint64_t bw_kib = w.bytes * 1'000'000'000ull / 1024 / length_ns;
  const std::uint64_t iops = w.ios * 1'000'000'000ull / length_ns;
  ds.bw_samples_kib.push_back(bw_kib);
  ds.iops_samples.push_back(iops);
  if (logs_ && !raw_logs_) {
    const std::uint64_t t = (end_ns - start_ns_) / kNsPerMs;
    const JobSpec& s = r_.spec;
    if (!s.write_bw_log.empty()) r_.bw_log.push_back({t, bw_kib, d, w.last_bs, 0});
    if (!s.write_iops_log.empty()) r_.iops_log.push_back({t, iops, d, w.last_bs, 0});
    if (!s.write_lat_log.empty() && w.ios != 0) {
      r_.lat_log.push_back({t, w.lat_sum / w.ios, d, w.last_bs, 0});
      r_.clat_log.push_back({t, w.clat_sum / w.ios, d, w.last_bs, 0});
      r_.slat_log.push_back({t, w.slat_sum / w.ios, d, w.last_bs, 0});
    }
  }
  w = Window{};
}

void JobRecorder::close_windows(std::uint64_t now_ns) {
  while (now_ns >= next_window_ns_) {
    for (int d = 0; d < 2; ++d)
      if (active_[d]) emit_window(d, next_window_ns_, window_ns_);
    window_start_ns_ = next_window_ns_;
    next_window_ns_ += window_ns_;
  }
  while (hist_window_ns_ && now_ns >= next_hist_ns_) {
    close_hist_window(next_hist_ns_);
    next_hist_ns_ += hist_window_ns_;
  }
}

void JobRecorder::close_hist_window(std::uint64_t end_ns) {
  for (int d = 0; d < 2; ++d) {
    if (hist_count_[d] == 0) continue;
    HistogramSample s;
    s.time_ms = (end_ns - start_ns_) / kNsPerMs;
    s.direction = d;
    s.block_size = hist_bs_[d];
    s.histogram = hist_[d];
    r_.hist_log.push_back(std::move(s));
    hist_[d].clear();
    hist_count_[d] = 0;
  }
}

void JobRecorder::finish(std::uint64_t now_ns) {
  close_windows(now_ns);
  // A last partial window counts when it is at least half a window long,
  // so a short tail does not drag the minimum down.
  const std::uint64_t tail = now_ns - window_start_ns_;
  for (int d = 0; d < 2; ++d) {
    if (!active_[d]) continue;
    const bool empty_job = r_.dir[d].bw_samples_kib.empty();
    if ((tail * 2 >= window_ns_ || empty_job) && tail > 0 && (win_[d].ios != 0 || !empty_job))
      emit_window(d, now_ns, tail);
  }
  if (hist_window_ns_) close_hist_window(now_ns);
  r_.runtime_ns = now_ns - start_ns_;
  for (DirectionStats& d : r_.dir)
    if (d.ios != 0 || d.errors != 0) d.runtime_ns = r_.runtime_ns;
}

}  // namespace cxlpool::io
