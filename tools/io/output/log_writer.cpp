// SPDX-License-Identifier: Apache-2.0
// fio's log files, so fio_generate_plots / fiologparser*.py read ours:
// "<prefix>_{lat,clat,slat,bw,iops}.<job>.log" lines
// "time (ms), value, direction, block size, priority" (priority: the I/O's
// ioprio value with log_prio=1, else 1 for the real-time class and 0), and "<prefix>_clat_hist.<job>.log" lines
// "time, direction, block size, <1856 bin counts>" in fio's own bin layout
// (64 linear bins per power of two, 29 groups).
#include <fmt/format.h>

#include <bit>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "output.hpp"

namespace cxlpool::io {

namespace fs = std::filesystem;

namespace {

constexpr int kFioPlatBits = 6;
constexpr int kFioPlatVal = 1 << kFioPlatBits;
constexpr int kFioPlatGroups = 29;
constexpr int kFioPlatBins = kFioPlatGroups * kFioPlatVal;

// The fio bin holding `ns`. Our buckets are 4x finer than fio's in every
// power of two at and above 2^8 and exact below, so each of ours falls
// wholly inside one of fio's: mapping by its value loses nothing fio kept.
int fio_bin_of(std::uint64_t ns) {
  if (ns < static_cast<std::uint64_t>(kFioPlatVal)) return static_cast<int>(ns);
  const int msb = 63 - std::countl_zero(ns);
  const int error_bits = msb - kFioPlatBits;
  const int bin = (error_bits + 1) * kFioPlatVal + static_cast<int>((ns >> error_bits) & (kFioPlatVal - 1));
  return bin < kFioPlatBins ? bin : kFioPlatBins - 1;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

Result<File> open_log(const fs::path& dir, const std::string& prefix, const char* kind, std::size_t job_number) {
  fs::path p = fs::path(fmt::format("{}_{}.{}.log", prefix, kind, job_number));
  if (p.is_relative()) p = dir / p;
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  File f(std::fopen(p.c_str(), "w"));
  if (!f) return fail_errno("open log " + p.string());
  return f;
}

// Windowed samples (log_avg_msec) carry block size 0, as fio writes them:
// a window mixes sizes.
// log_offset=1 adds each I/O's offset before the priority column, as fio does.
Result<void> write_samples(const fs::path& dir, const std::string& prefix, const char* kind, std::size_t job_number,
                           const std::vector<LogSample>& samples, bool windowed, bool with_offset) {
  auto f = open_log(dir, prefix, kind, job_number);
  if (!f) return tl::unexpected(f.error());
  for (const auto& s : samples) {
    std::fprintf(f->get(), "%llu, %llu, %d, %u", static_cast<unsigned long long>(s.time_ms),
                 static_cast<unsigned long long>(s.value), s.direction, windowed ? 0u : s.block_size);
    if (with_offset) std::fprintf(f->get(), ", %llu", static_cast<unsigned long long>(windowed ? 0 : s.offset));
    std::fprintf(f->get(), ", %u\n", windowed ? 0u : static_cast<unsigned>(s.priority));
  }
  if (std::ferror(f->get())) return fail(EIO, fmt::format("write {} log of job {}", kind, job_number));
  return {};
}

Result<void> write_hist(const fs::path& dir, const std::string& prefix, std::size_t job_number,
                        const std::vector<HistogramSample>& samples) {
  auto f = open_log(dir, prefix, "clat_hist", job_number);
  if (!f) return tl::unexpected(f.error());
  std::vector<std::uint64_t> bins(kFioPlatBins);
  for (const auto& s : samples) {
    std::fill(bins.begin(), bins.end(), 0);
    for (const auto& b : s.histogram.bins()) bins[static_cast<std::size_t>(fio_bin_of(b.value_ns))] += b.count;
    std::string line = fmt::format("{}, {}, {}", s.time_ms, s.direction, s.block_size);
    for (auto c : bins) fmt::format_to(std::back_inserter(line), ", {}", c);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), f->get());
  }
  if (std::ferror(f->get())) return fail(EIO, fmt::format("write histogram log of job {}", job_number));
  return {};
}

}  // namespace

Result<void> write_logs(const RunResult& run, const fs::path& dir) {
  for (std::size_t i = 0; i < run.jobs.size(); ++i) {
    const auto& job = run.jobs[i];
    const auto& s = job.spec;
    const std::size_t n = i + 1;  // fio numbers jobs from 1 in start order
    const bool windowed = s.log_avg_msec != 0;
    if (!s.write_lat_log.empty()) {
      if (auto r = write_samples(dir, s.write_lat_log, "lat", n, job.lat_log, windowed, s.log_offset); !r) return r;
      if (auto r = write_samples(dir, s.write_lat_log, "clat", n, job.clat_log, windowed, s.log_offset); !r) return r;
      if (auto r = write_samples(dir, s.write_lat_log, "slat", n, job.slat_log, windowed, s.log_offset); !r) return r;
    }
    if (!s.write_bw_log.empty()) {
      if (auto r = write_samples(dir, s.write_bw_log, "bw", n, job.bw_log, windowed, s.log_offset); !r) return r;
    }
    if (!s.write_iops_log.empty()) {
      if (auto r = write_samples(dir, s.write_iops_log, "iops", n, job.iops_log, windowed, s.log_offset); !r) return r;
    }
    if (!s.write_hist_log.empty()) {
      if (auto r = write_hist(dir, s.write_hist_log, n, job.hist_log); !r) return r;
    }
  }
  return {};
}

}  // namespace cxlpool::io
