// SPDX-License-Identifier: Apache-2.0
#include "job_worker.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "../engines/engine.hpp"
#include "../trace/trace.hpp"
#include "block_size_picker.hpp"
#include "depth_search.hpp"
#include "cxlpool/common/clock.hpp"
#include "file_layout.hpp"
#include "flow_control.hpp"
#include "io_priority.hpp"
#include "job_recorder.hpp"
#include "offset_generator.hpp"
#include "placement.hpp"
#include "rate_limiter.hpp"
#include "rng.hpp"
#include "steady_state.hpp"
#include "thread_usage.hpp"
#include "verify_block.hpp"
#include "write_data.hpp"
#include "zone_table.hpp"

namespace cxlpool::io {
namespace {

using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

constexpr std::uint64_t kForever = ~0ull;
constexpr std::uint64_t kMaxSleepNs = 100'000'000;  // sleeps are cut so a stop request is seen soon
// A job held back by flow= without flow_sleep asks again this soon (fio
// spins; a short sleep leaves the CPU to the jobs it waits for).
constexpr std::uint64_t kFlowRetryNs = 10'000;

std::uint64_t wall_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 + static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000;
}

void sleep_ns(std::uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  ::nanosleep(&ts, nullptr);
}

// Engines that run the I/O inside submit(): no submission latency of their
// own, the whole time is completion latency (fio reports psync that way).
bool completes_in_submit(std::string_view engine) {
  return engine == "psync" || engine == "sync" || engine == "mmap" || engine == "null";
}

// fio's iodepth_level buckets: 1, 2-3, 4-7, 8-15, 16-31, 32-63, >=64.
int depth_bucket(std::uint32_t depth) {
  if (depth <= 1) return 0;
  const int log2 = 31 - __builtin_clz(depth);
  return log2 > 6 ? 6 : log2;
}

// fio's iodepth_submit / iodepth_complete buckets (requests per submit or
// per reap call): 0, 1-4, 5-8, 9-16, 17-32, 33-64, more.
int batch_bucket(std::size_t n) {
  if (n == 0) return 0;
  if (n <= 4) return 1;
  if (n > 64) return 6;
  return 64 - __builtin_clzll(n - 1) - 1;  // 5-8 -> 2, 9-16 -> 3, 17-32 -> 4, 33-64 -> 5
}

template <typename Job>
bool replay_no_stall(const Job& job) {
  if constexpr (requires { job.replay_no_stall; }) return static_cast<bool>(job.replay_no_stall);
  return false;
}

std::string job_label(const JobSpec& job) {
  return job.name + (job.numjobs > 1 ? "." + std::to_string(job.clone) : std::string());
}

// A bitmap of the units a job wrote, for verify.
class UnitSet {
 public:
  void resize(std::uint64_t units) { words_.assign((units + 63) / 64, 0); }
  void set(std::uint64_t u) { words_[u >> 6] |= 1ull << (u & 63); }
  bool test(std::uint64_t u) const { return u / 64 < words_.size() && ((words_[u >> 6] >> (u & 63)) & 1); }
  // First set unit at or after `u`; kForever when none.
  std::uint64_t next(std::uint64_t u) const {
    std::uint64_t w = u >> 6;
    if (w >= words_.size()) return kForever;
    std::uint64_t bits = words_[w] & (~0ull << (u & 63));
    while (bits == 0) {
      if (++w >= words_.size()) return kForever;
      bits = words_[w];
    }
    return (w << 6) + static_cast<std::uint64_t>(__builtin_ctzll(bits));
  }

 private:
  std::vector<std::uint64_t> words_;
};

struct FileState {
  std::string path;
  std::unique_ptr<Engine> engine;
  std::span<std::byte*> buffers;
  std::uint64_t region_start = 0;
  std::uint64_t region_bytes = 0;
  std::optional<OffsetGenerator> offsets;
  UnitSet written;  // verify only
  std::vector<IoRequest> batch;
  // zonemode=zbd: the file's zones (shared with the run's other jobs on
  // it) and the zones [zone_first, zone_end) of this job's region.
  std::shared_ptr<ZoneTable> zones;
  std::uint64_t zone_first = 0;
  std::uint64_t zone_end = 0;
  std::uint64_t data_bytes = 0;  // bytes at the start of the file known to hold data
  std::uint64_t file_bytes = 0;  // the file's or device's size (the job's for a character device)
};

struct Slot {
  std::uint64_t start_ns = 0;
  std::uint64_t issue_ns = 0;
  std::uint64_t offset = 0;
  std::uint32_t bytes = 0;
  std::uint16_t file = 0;
  std::uint8_t dir = 0;
  bool verify_read = false;
  std::uint16_t ioprio = 0;  // the I/O's priority (the job's when it has none of its own)
};

// The next I/O the job wants, decided before it is known whether it may go
// now, so a rate-limited direction keeps its turn.
struct Plan {
  bool valid = false;
  int dir = kReadDir;
  std::uint32_t bytes = 0;
  std::uint16_t file = 0;
  std::uint64_t offset = 0;
  bool fixed_offset = false;  // trace and verify plans come with theirs
  bool verify_read = false;
};

enum class Phase { kMain, kVerify, kDone };

// zonemode=zbd: the file's shared zone table and the whole zones of the
// job's region (fio rounds the region in to zone boundaries as well).
Result<void> attach_zones(FileState& f, const JobSpec& job, std::uint32_t max_bytes) {
  if (is_zoned_block_device(f.path))
    return fail(ENOTSUP, f.path + ": a zoned block device: cxlpool-io emulates zones (zonemode=zbd) on regular "
                                  "files and conventional block devices only; it issues no zone reports or resets");
  if (job.zonesize == 0)
    return fail(EINVAL, f.path + ": zonemode=zbd on a target that is not a zoned block device needs zonesize=");
  const std::uint64_t capacity = job.zonecapacity != 0 ? job.zonecapacity : job.zonesize;
  if (capacity < max_bytes)
    return fail(EINVAL, "zonemode=zbd: a zone's capacity (" + std::to_string(capacity) +
                            " bytes) is smaller than the largest I/O (" + std::to_string(max_bytes) + " bytes)");
  auto table = shared_zone_table(f.path, f.file_bytes, f.data_bytes, job.zonesize, capacity, job.max_open_zones);
  if (!table) return tl::unexpected(table.error());
  f.zones = std::move(*table);
  f.zone_first = (f.region_start + job.zonesize - 1) / job.zonesize;
  f.zone_end = std::min<std::uint64_t>((f.region_start + f.region_bytes) / job.zonesize, f.zones->zones());
  if (f.zone_end <= f.zone_first)
    return fail(EINVAL, f.path + ": zonemode=zbd: the region [" + std::to_string(f.region_start) + ", " +
                            std::to_string(f.region_start + f.region_bytes) + ") holds no whole zone of " +
                            std::to_string(job.zonesize) + " bytes");
  // A writer that verifies starts from empty zones, as fio's does.
  if (does_writes(job.rw) && job.verify != VerifyMode::kNone) f.zones->reset_range(f.zone_first, f.zone_end);
  return {};
}

}  // namespace

struct JobWorker::State {
  JobResult result;
  RunOptions options;
  std::vector<FileState> files;
  std::optional<BlockSizePicker> sizes[2];
  std::uint32_t unit = 0;
  std::uint32_t buffer_bytes = 0;
  bool sync_engine = false;
  Rng rng{1};
  RateLimiter limiter[2];
  std::optional<JobRecorder> recorder;
  std::optional<IoPriority> priority;
  std::optional<DepthSearch> depth_search;  // latency_target
  std::optional<WriteData> write_data;      // dedupe / compression: buffers refilled per write
  std::vector<Slot> slots;
  std::vector<std::uint32_t> free_slots;
  std::vector<IoCompletion> completions;
  std::uint32_t in_flight = 0;
  std::uint32_t depth = 1;
  std::uint32_t batch_submit = 1;
  std::uint32_t complete_min = 1;
  std::uint32_t complete_max = 1;
  std::uint32_t low_water = 1;

  std::vector<TraceOp> trace;
  std::size_t trace_next = 0;
  std::uint64_t trace_start_ns = 0;

  Phase phase = Phase::kMain;
  // verify_backlog: written blocks (file, unit) waiting for their check.
  std::deque<std::pair<std::uint16_t, std::uint64_t>> backlog;
  std::uint16_t verify_file = 0;
  std::uint64_t verify_unit = 0;

  std::uint64_t io_budget = 0;  // bytes; 0 = no limit (time_based, trace)
  std::uint64_t issued_bytes = 0;
  std::uint64_t issued_ios = 0;  // number_ios
  std::vector<int> cpus;         // cpus_allowed / numa_cpu_nodes; empty = any
  FlowMember flow;
  SteadyState steady;
  std::atomic<bool> terminate{false};  // request_stop()
  // ratemin: the window being measured and the totals when it opened.
  std::uint64_t ratemin_window_start = 0;
  std::uint64_t ratemin_bytes_at[2] = {0, 0};
  std::uint64_t ratemin_ios_at[2] = {0, 0};
  std::uint64_t issued_since_think = 0;
  bool think_pending = false;
  std::uint16_t next_file = 0;
  Plan plan;

  bool in_ramp = false;
  std::uint64_t ramp_end_ns = 0;
  std::uint64_t stats_start_ns = 0;
  std::uint64_t runtime_end_ns = kForever;
  bool stop_issuing = false;
  ThreadUsage usage_base;
  HelperCpu helper_base;
  std::uint64_t now = 0;

  int error = 0;
  std::string error_message;
  std::uint64_t verify_failures = 0;

  void fail_job(int code, std::string message) {
    if (error == 0) {
      error = code;
      error_message = std::move(message);
    }
    stop_issuing = true;
  }

  HelperCpu helper_total() const {
    HelperCpu sum;
    for (const FileState& f : files) {
      if (auto h = f.engine->helper_cpu()) {
        sum.user_ns += h->user_ns;
        sum.system_ns += h->system_ns;
      }
    }
    return sum;
  }

  void begin_stats() {
    in_ramp = false;
    stats_start_ns = now;
    recorder->start(now);
    usage_base = thread_usage();
    helper_base = helper_total();
    issued_bytes = 0;
    const JobSpec& job = result.spec;
    if (job.runtime_ns != 0) runtime_end_ns = now + job.runtime_ns;
    for (auto& l : limiter) l.reset(now);
    ratemin_window_start = now;
    if (depth_search) depth_search->restart(now);
  }

  bool wants_ratemin() const {
    const JobSpec& j = result.spec;
    return j.ratemin_bytes[0] || j.ratemin_bytes[1] || j.ratemin_iops[0] || j.ratemin_iops[1];
  }
  // fio's ratemin / rate_iops_min: each ratecycle, a direction that moved
  // less than its minimum ends the job with an error.
  void check_ratemin();

  // Decides the next I/O (direction, size, file) without consuming it.
  // Returns false when the job has nothing more to issue in this phase.
  bool next_plan(std::uint64_t& wait_until);
  bool issue(const Plan& p, std::uint32_t slot);
  bool flush(std::uint16_t file, std::uint64_t start_ns);
  void complete(const IoCompletion& c, std::uint64_t now_ns);
  bool reap(bool block, std::uint64_t deadline);
  void count_reaped(std::size_t n) {
    if (!in_ramp) ++result.complete_histogram[batch_bucket(n)];
  }
  void run();
};

bool JobWorker::State::next_plan(std::uint64_t& wait_until) {
  const JobSpec& job = result.spec;
  if (plan.valid) {
    // Already decided; only the rate may hold it back.
    if (!plan.fixed_offset || !trace.empty()) {
      const std::uint64_t w = limiter[plan.dir].wait_ns(now, plan.bytes);
      if (w != 0) {
        wait_until = now + w;
        return true;
      }
    }
    if (!trace.empty() && !replay_no_stall(job) && plan.fixed_offset && !plan.verify_read) {
      const std::uint64_t due = trace_start_ns + trace[trace_next - 1].time_ns;
      if (due > now) {
        wait_until = due;
        return true;
      }
    }
    return true;
  }
  // verify_backlog: once N written blocks are back (or the writing is
  // over), they are read and checked before more is written.
  const bool main_over = (io_budget != 0 && issued_bytes >= io_budget) ||
                         (job.number_ios != 0 && issued_ios >= job.number_ios);
  if (!backlog.empty() && (backlog.size() >= job.verify_backlog || main_over)) {
    const auto [file, u] = backlog.front();
    backlog.pop_front();
    plan = Plan{true, kReadDir, unit, file, files[file].region_start + u * unit, true, true};
    return true;
  }
  if (phase == Phase::kVerify) {
    while (verify_file < files.size()) {
      FileState& f = files[verify_file];
      const std::uint64_t u = f.written.next(verify_unit);
      if (u != kForever) {
        verify_unit = u + 1;
        plan = Plan{true, kReadDir, unit, verify_file, f.region_start + u * unit, true, true};
        return true;
      }
      ++verify_file;
      verify_unit = 0;
    }
    return false;
  }
  if (!trace.empty()) {
    if (trace_next >= trace.size()) return false;
    const TraceOp& op = trace[trace_next++];
    plan = Plan{true, op.direction == kWriteDir ? kWriteDir : kReadDir, op.bytes, 0,
                job.offset + op.offset, true, false};
    return next_plan(wait_until);
  }
  if (io_budget != 0 && issued_bytes >= io_budget) return false;
  if (job.number_ios != 0 && issued_ios >= job.number_ios) return false;
  int dir = does_reads(job.rw) ? kReadDir : kWriteDir;
  if (does_reads(job.rw) && does_writes(job.rw)) dir = rng.below(100) < job.rwmixread ? kReadDir : kWriteDir;
  plan = Plan{};
  plan.valid = true;
  plan.dir = dir;
  plan.bytes = sizes[dir]->pick(rng);
  plan.file = next_file;
  next_file = static_cast<std::uint16_t>((next_file + 1) % files.size());
  return next_plan(wait_until);
}

bool JobWorker::State::issue(const Plan& p, std::uint32_t slot_index) {
  FileState& f = files[p.file];
  Slot& s = slots[slot_index];
  std::uint64_t offset = p.offset;
  std::uint32_t bytes = p.bytes;
  if (!p.fixed_offset) {
    const OffsetGenerator::Pick pick = f.offsets->next(p.dir, p.bytes);
    offset = pick.offset;
    bytes = pick.bytes;
  }
  if (f.zones && !p.verify_read) {
    if (p.dir == kWriteDir) {
      const ZoneTable::Io io = f.zones->place_write(offset, bytes, unit, f.zone_first, f.zone_end, rng);
      offset = io.offset;
      bytes = io.bytes;
    } else if (!result.spec.read_beyond_wp) {
      const auto io = f.zones->place_read(offset, bytes, unit, f.zone_first, f.zone_end, !is_random(result.spec.rw));
      if (!io) return false;
      offset = io->offset;
      bytes = io->bytes;
    }
  }
  s.offset = offset;
  s.bytes = bytes;
  s.file = p.file;
  s.dir = static_cast<std::uint8_t>(p.dir);
  s.verify_read = p.verify_read;
  std::byte* buf = f.buffers[slot_index];
  const JobSpec& job = result.spec;
  s.ioprio = priority->pick(p.dir, bytes, rng);
  if (p.dir == kWriteDir && job.verify == VerifyMode::kCrc32c) stamp_verify_block(buf, bytes, offset, job.randseed);
  if (p.dir == kWriteDir && write_data) write_data->fill(buf, bytes, rng);
  IoRequest r;
  r.op = p.dir == kWriteDir ? IoOp::kWrite : IoOp::kRead;
  r.offset = offset;
  r.buffer = buf;
  r.length = bytes;
  r.user_data = slot_index;
  r.buffer_index = job.fixedbufs ? static_cast<std::int32_t>(slot_index) : hal::kNoRegisteredBuffer;
  // Without cmdprio the thread's priority (prio/prioclass) applies.
  if (priority->per_io()) r.ioprio = s.ioprio;
  f.batch.push_back(r);
  if (!p.verify_read) {
    issued_bytes += bytes;
    ++issued_ios;
    limiter[p.dir].consume(now, bytes);
    if (job.thinktime_ns != 0 && ++issued_since_think >= std::max<std::uint32_t>(1, job.thinktime_blocks))
      think_pending = true;
  }
  return true;
}

bool JobWorker::State::flush(std::uint16_t file, std::uint64_t start_ns) {
  FileState& f = files[file];
  if (f.batch.empty()) return true;
  auto ok = f.engine->submit(f.batch);
  const std::uint64_t issued = sync_engine ? start_ns : monotonic_ns();
  const auto n = static_cast<std::uint32_t>(f.batch.size());
  if (!ok) {
    for (const IoRequest& r : f.batch) free_slots.push_back(static_cast<std::uint32_t>(r.user_data));
    f.batch.clear();
    fail_job(ok.error().code, std::string(f.engine->name()) + ": submit: " + ok.error().message);
    return false;
  }
  for (const IoRequest& r : f.batch) {
    Slot& s = slots[r.user_data];
    s.start_ns = start_ns;
    s.issue_ns = issued;
  }
  f.batch.clear();
  in_flight += n;
  if (!in_ramp) {
    result.iodepth_histogram[depth_bucket(in_flight)] += n;
    ++result.submit_histogram[batch_bucket(n)];
  }
  now = issued;
  return true;
}

void JobWorker::State::complete(const IoCompletion& c, std::uint64_t now_ns) {
  const auto index = static_cast<std::uint32_t>(c.user_data);
  Slot& s = slots[index];
  free_slots.push_back(index);
  --in_flight;
  const JobSpec& job = result.spec;
  const bool counted = !in_ramp && s.start_ns >= stats_start_ns;
  if (c.result < 0) {
    const int err = static_cast<int>(-c.result);
    if (counted) recorder->record_error(s.dir);
    std::string what = std::string(files[s.file].engine->name()) + ": " + (s.dir == kWriteDir ? "write" : "read") +
                       " of " + std::to_string(s.bytes) + " bytes at " + std::to_string(s.offset) + " in " +
                       files[s.file].path;
    if (job.hipri && err == EOPNOTSUPP) what += ": hipri needs NVMe poll queues (nvme.poll_queues)";
    fail_job(err, errno_message(what, err));
    return;
  }
  const auto bytes = static_cast<std::uint32_t>(c.result);
  if (counted) {
    JobRecorder::Completion rc;
    rc.direction = s.dir;
    rc.bytes = bytes;
    rc.requested = s.bytes;
    rc.offset = s.offset;
    rc.slat_ns = s.issue_ns - s.start_ns;
    rc.clat_ns = now_ns > s.issue_ns ? now_ns - s.issue_ns : 0;
    rc.lat_ns = now_ns > s.start_ns ? now_ns - s.start_ns : 0;
    rc.has_slat = !sync_engine;
    rc.has_lat = !job.gtod_reduce;
    rc.priority = logged_priority(s.ioprio, job.log_prio);
    recorder->record(rc, now_ns);
    if (depth_search && !s.verify_read) {
      depth_search->record(rc.lat_ns, now_ns);
      // fio's latency_run=0: the job ends once the depth is found.
      if (depth_search->done()) stop_issuing = true;
    }
  }
  if (job.verify != VerifyMode::kCrc32c || bytes != s.bytes) return;
  FileState& f = files[s.file];
  const std::uint64_t u = (s.offset - f.region_start) / unit;
  if (s.dir == kWriteDir) {
    f.written.set(u);
    if (job.verify_backlog != 0) backlog.emplace_back(s.file, u);
    return;
  }
  // Reads are checked when the block is known to hold a stamp: the verify
  // pass, a block this job wrote, or any block of a read-only job (it reads
  // what an earlier write job stamped).
  const bool check = s.verify_read || f.written.test(u) || !does_writes(job.rw);
  if (!check) return;
  const VerifyOutcome v = check_verify_block(f.buffers[index], bytes, s.offset);
  if (v == VerifyOutcome::kOk) return;
  ++verify_failures;
  if (verify_failures == 1)
    error_message = "verify: " + f.path + " at " + std::to_string(s.offset) + ": " + verify_outcome_name(v);
  if (job.verify_dump) {
    // fio's verify_dump: the block as read, for a look at the corruption
    // (named like fio's, in the working directory).
    const std::string name = std::filesystem::path(f.path).filename().string() + "." + std::to_string(s.offset) + ".received";
    std::ofstream(name, std::ios::binary).write(reinterpret_cast<const char*>(f.buffers[index]), bytes);
  }
}

// Reaps completions: blocking (at least iodepth_batch_complete_min, or one)
// until `deadline`, or only what is ready; at most iodepth_batch_complete_max
// per call, as fio takes them.
void JobWorker::State::check_ratemin() {
  const JobSpec& job = result.spec;
  if (in_ramp || now < ratemin_window_start + job.ratecycle_ns) return;
  const double seconds = static_cast<double>(now - ratemin_window_start) / 1e9;
  for (int d = 0; d < 2; ++d) {
    const DirectionStats& ds = result.dir[d];
    const bool active = d == kReadDir ? does_reads(job.rw) : does_writes(job.rw);
    const double bytes = static_cast<double>(ds.io_bytes - ratemin_bytes_at[d]) / seconds;
    const double ios = static_cast<double>(ds.ios - ratemin_ios_at[d]) / seconds;
    const char* what = d == kReadDir ? "read" : "write";
    if (active && job.ratemin_bytes[d] != 0 && bytes < static_cast<double>(job.ratemin_bytes[d])) {
      fail_job(EIO, std::string("ratemin: ") + what + " rate " + std::to_string(static_cast<std::uint64_t>(bytes)) +
                        " B/s is below the minimum of " + std::to_string(job.ratemin_bytes[d]) + " B/s");
    } else if (active && job.ratemin_iops[d] != 0 && ios < static_cast<double>(job.ratemin_iops[d])) {
      fail_job(EIO, std::string("rate_iops_min: ") + what + " rate " + std::to_string(static_cast<std::uint64_t>(ios)) +
                        " IOPS is below the minimum of " + std::to_string(job.ratemin_iops[d]));
    }
    ratemin_bytes_at[d] = ds.io_bytes;
    ratemin_ios_at[d] = ds.ios;
  }
  ratemin_window_start = now;
}

bool JobWorker::State::reap(bool block, std::uint64_t deadline) {
  if (in_flight == 0) return true;
  std::size_t min = block ? std::clamp<std::size_t>(complete_min, 1, in_flight) : 0;
  const std::size_t max = std::clamp<std::size_t>(complete_max, std::max<std::size_t>(min, 1), completions.size());
  const std::chrono::nanoseconds timeout =
      !block ? std::chrono::nanoseconds(0)
             : deadline == kForever ? hal::BlockDevice::kWaitForever
                                    : std::chrono::nanoseconds(deadline > now ? deadline - now : 0);
  std::size_t got_total = 0;
  if (files.size() == 1) {
    auto got = files[0].engine->reap(std::span(completions).first(max), min, timeout);
    now = monotonic_ns();
    if (!got) {
      fail_job(got.error().code, std::string(files[0].engine->name()) + ": reap: " + got.error().message);
      return false;
    }
    for (std::size_t i = 0; i < *got; ++i) complete(completions[i], now);
    got_total = *got;
    if (got_total != 0) count_reaped(got_total);
  } else {
    // Several files: what is ready everywhere, then wait on the busiest.
    for (FileState& f : files) {
      if (f.engine->in_flight() == 0 || got_total >= max) continue;
      auto got = f.engine->reap(std::span(completions).first(max - got_total), 0, std::chrono::nanoseconds(0));
      if (!got) {
        fail_job(got.error().code, std::string(f.engine->name()) + ": reap: " + got.error().message);
        return false;
      }
      now = monotonic_ns();
      for (std::size_t i = 0; i < *got; ++i) complete(completions[i], now);
      got_total += *got;
    }
    if (got_total != 0) count_reaped(got_total);
    if (got_total < min && in_flight != 0) {
      FileState* busiest = &files[0];
      for (FileState& f : files)
        if (f.engine->in_flight() > busiest->engine->in_flight()) busiest = &f;
      auto got = busiest->engine->reap(std::span(completions).first(max - got_total), 1, timeout);
      now = monotonic_ns();
      if (!got) {
        fail_job(got.error().code, std::string(busiest->engine->name()) + ": reap: " + got.error().message);
        return false;
      }
      for (std::size_t i = 0; i < *got; ++i) complete(completions[i], now);
      if (*got != 0) count_reaped(*got);
    }
  }
  return true;
}

void JobWorker::State::run() {
  const JobSpec& job = result.spec;
  if (auto ok = pin_thread(cpus); !ok) {
    result.error = ok.error().code;
    result.error_message = ok.error().message;
    return;
  }
  if (priority->job_value() != 0) {
    if (auto ok = set_thread_ioprio(priority->job_value()); !ok) {
      result.error = ok.error().code;
      result.error_message = ok.error().message;
      return;
    }
  }
  // fio's startdelay: the job begins that much later; its runtime starts then.
  for (std::uint64_t left = job.startdelay_ns; left != 0;) {
    if (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) break;
    const std::uint64_t step = std::min(left, kMaxSleepNs);
    sleep_ns(step);
    left -= step;
  }
  for (FileState& f : files) {
    if (auto ok = f.engine->start(); !ok) {
      result.error = ok.error().code;
      result.error_message = ok.error().message;
      return;
    }
  }
  result.start_unix_ms = wall_ms();
  now = monotonic_ns();
  trace_start_ns = now;
  if (job.ramp_time_ns != 0) {
    in_ramp = true;
    ramp_end_ns = now + job.ramp_time_ns;
    recorder->start(now);
  } else {
    begin_stats();
  }
  for (;;) {
    if (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) stop_issuing = true;
    if (terminate.load(std::memory_order_relaxed)) stop_issuing = true;
    if (in_ramp && now >= ramp_end_ns) begin_stats();
    if (!in_ramp && now >= runtime_end_ns) stop_issuing = true;

    // Fill the queue, submitting iodepth_batch_submit requests at a time.
    std::uint64_t wait_until = kForever;
    bool exhausted = false;
    std::uint64_t batch_start = now;
    std::uint32_t pending = 0;  // issued into batches, not yet submitted
    const std::uint32_t allowed = depth_search ? std::min(depth, depth_search->depth()) : depth;
    while (!stop_issuing && !think_pending && in_flight + pending < allowed) {
      if (!next_plan(wait_until)) {
        exhausted = true;
        break;
      }
      if (wait_until != kForever) break;
      if (!plan.verify_read && !flow.try_issue()) {
        // Ahead of this job's share of its flow: hold the I/O back.
        wait_until = now + std::max<std::uint64_t>(job.flow_sleep_ns, kFlowRetryNs);
        break;
      }
      if (pending == 0) batch_start = now;
      const std::uint32_t slot = free_slots.back();
      free_slots.pop_back();
      if (!issue(plan, slot)) {
        // zonemode=zbd: no zone of the region holds data to read.
        free_slots.push_back(slot);
        plan.valid = false;
        exhausted = true;
        stop_issuing = true;
        break;
      }
      plan.valid = false;
      ++pending;
      const std::uint16_t file = slots[slot].file;
      if (files[file].batch.size() >= batch_submit) {
        pending -= static_cast<std::uint32_t>(files[file].batch.size());
        flush(file, batch_start);
        batch_start = now;
      }
    }
    if (pending != 0)
      for (std::uint16_t i = 0; i < files.size(); ++i) flush(i, batch_start);

    if (in_flight == 0) {
      if (stop_issuing) break;
      if (think_pending) {
        // fio's thinktime: every issued I/O has completed, then the job
        // stalls (the "compute" between I/O bursts).
        std::uint64_t left = job.thinktime_ns;
        while (left != 0 && !(options.stop && options.stop->load(std::memory_order_relaxed))) {
          const std::uint64_t step = std::min(left, kMaxSleepNs);
          sleep_ns(step);
          left -= step;
        }
        think_pending = false;
        issued_since_think = 0;
        now = monotonic_ns();
        continue;
      }
      if (exhausted) {
        if (!backlog.empty()) continue;  // the last writes' checks are still to come
        if (phase == Phase::kMain && job.verify == VerifyMode::kCrc32c && does_writes(job.rw) &&
            !does_reads(job.rw) && trace.empty() && job.verify_backlog == 0) {
          phase = Phase::kVerify;
          continue;
        }
        break;
      }
      if (wait_until != kForever) {
        std::uint64_t until = std::min(wait_until, in_ramp ? ramp_end_ns : runtime_end_ns);
        if (until > now) sleep_ns(std::min(until - now, kMaxSleepNs));
        now = monotonic_ns();
        continue;
      }
      continue;
    }
    // Something is in flight: wait for completions (bounded by the next
    // event the loop must act on).
    std::uint64_t deadline = std::min(wait_until, in_ramp ? ramp_end_ns : runtime_end_ns);
    const bool full = in_flight >= allowed;
    bool reaped_ok = reap(true, deadline);
    // A full queue drains to iodepth_low before it is refilled (fio's
    // low-water mark; by default iodepth, so one reap and refill).
    const std::uint32_t low = std::min(low_water, allowed);
    while (reaped_ok && full && in_flight > low && now < deadline) reaped_ok = reap(true, deadline);
    if (!reaped_ok) {
      // An engine failed while reaping; what is in flight cannot be waited
      // for any more.
      break;
    }
    if (recorder && !in_ramp) recorder->tick(now);
    if (wants_ratemin()) check_ratemin();
    if (steady.enabled() && !in_ramp) {
      const DirectionStats& r = result.dir[kReadDir];
      const DirectionStats& w = result.dir[kWriteDir];
      // fio's ss=: steady state reached ends the job (successfully).
      if (steady.update(now, stats_start_ns, r.io_bytes + w.io_bytes, r.ios + w.ios)) stop_issuing = true;
    }
  }
  if (in_ramp) begin_stats();  // the whole job fit in the ramp: report nothing, not ramp I/O
  recorder->finish(now);
  result.latency_depth = depth_search ? depth_search->depth() : depth;
  const ThreadUsage used = thread_usage() - usage_base;
  const HelperCpu helper_end = helper_total();
  result.helper_user_ns = helper_end.user_ns - std::min(helper_end.user_ns, helper_base.user_ns);
  result.helper_system_ns = helper_end.system_ns - std::min(helper_end.system_ns, helper_base.system_ns);
  const double runtime = static_cast<double>(std::max<std::uint64_t>(1, result.runtime_ns));
  result.usr_cpu = 100.0 * static_cast<double>(used.user_ns + result.helper_user_ns) / runtime;
  result.sys_cpu = 100.0 * static_cast<double>(used.system_ns + result.helper_system_ns) / runtime;
  result.context_switches = used.context_switches;
  result.major_faults = used.major_faults;
  result.minor_faults = used.minor_faults;
  result.verify_errors = verify_failures;
  if (error == 0 && verify_failures != 0) {
    error = EILSEQ;
    error_message += " (" + std::to_string(verify_failures) + " blocks failed verification)";
  }
  result.error = error;
  result.error_message = error_message;
}

JobWorker::JobWorker(std::unique_ptr<State> state) : s_(std::move(state)) {}
JobWorker::~JobWorker() = default;

void JobWorker::run() { s_->run(); }
void JobWorker::request_stop() { s_->terminate.store(true, std::memory_order_relaxed); }
JobResult& JobWorker::result() { return s_->result; }

Result<std::unique_ptr<JobWorker>> JobWorker::prepare(const JobSpec& job, const RunOptions& options) {
  auto s = std::make_unique<State>();
  s->result.spec = job;
  s->priority.emplace(s->result.spec);
  s->options = options;
  const std::string label = job_label(job);
  const auto bad = [&](int code, const std::string& why) { return fail(code, "job " + label + ": " + why); };

  if (!job.trace_file.empty()) {
    auto ops = read_trace(job.trace_file, job.trace_format);
    if (!ops) return bad(ops.error().code, ops.error().message);
    s->trace = std::move(*ops);
    if (s->trace.empty()) return bad(EINVAL, "trace " + job.trace_file + " holds no reads or writes");
  }
  bool trace_writes = false;
  std::uint64_t trace_extent = 0;
  std::uint32_t trace_max_bytes = 0;
  for (const TraceOp& op : s->trace) {
    trace_writes |= op.direction == kWriteDir;
    trace_extent = std::max(trace_extent, op.offset + op.bytes);
    trace_max_bytes = std::max(trace_max_bytes, op.bytes);
  }

  std::vector<std::string> paths = job.filenames;
  if (paths.empty())
    paths.push_back((job.directory.empty() ? std::string(".") : job.directory) + "/" + job.name + "." +
                    std::to_string(job.clone) + ".0");
  if (paths.size() > 1 && !s->trace.empty()) return bad(EINVAL, "trace replay takes one file");
  if (paths.size() > 0xffff) return bad(EINVAL, "too many files");

  const bool writes = does_writes(job.rw) || trace_writes;
  const bool reads = does_reads(job.rw) || !s->trace.empty();
  s->depth = std::max<std::uint32_t>(1, job.iodepth);
  s->batch_submit = std::clamp<std::uint32_t>(job.iodepth_batch_submit, 1, s->depth);
  s->complete_min = std::clamp<std::uint32_t>(job.iodepth_batch_complete_min, 1, s->depth);
  s->complete_max = std::clamp<std::uint32_t>(job.iodepth_batch_complete_max, s->complete_min, s->depth);
  s->low_water = job.iodepth_low == 0 ? s->depth : std::min(job.iodepth_low, s->depth);
  if (job.latency_target_ns != 0)
    s->depth_search.emplace(job.latency_target_ns, job.latency_window_ns, job.latency_percentile, s->depth);

  for (const std::string& path : paths) {
    FileState f;
    f.path = path;
    const FileFacts facts = file_facts(path);
    if (!facts.exists && !job.allow_file_create && engine_uses_local_files(job.ioengine))
      return bad(ENOENT, path + " does not exist and allow_file_create=0 forbids creating it");
    // filesize= sizes each file; size= is then the job's total.
    const std::uint64_t per_file = job.filesize != 0 ? job.filesize : job.size;
    std::uint64_t need = per_file != 0 ? job.offset + per_file : 0;
    need = std::max(need, s->trace.empty() ? 0 : job.offset + trace_extent);
    if (need == 0 && !facts.exists)
      return bad(ENOENT, path + " does not exist and no size= says how large to make it");
    if (need == 0 && facts.is_char_device && s->trace.empty())
      return bad(EINVAL, path + " is a character device: size= says how many bytes the job moves");
    // A pooled device (ioengine=devpool) is the backend's: its filename names the link.
    // Bytes of the file that hold data (zonemode=zbd: its zones start full).
    std::uint64_t written = facts.is_block_device ? UINT64_MAX : facts.size;
    if (need != 0 && !facts.is_block_device && !facts.is_char_device && engine_uses_local_files(job.ioengine)) {
      const bool fill = reads || job.verify != VerifyMode::kNone;
      if (auto ok = lay_out_file(path, need, fill); !ok)
        return bad(ok.error().code, ok.error().message);
      if (fill) written = std::max(written, need);
    }
    f.data_bytes = written;
    auto engine = open_engine(job, EngineTarget{path, need, writes});
    if (!engine) return bad(engine.error().code, engine.error().message);
    f.engine = std::move(*engine);
    // A character device (fio's examples use /dev/null and /dev/zero) has
    // no size of its own: the job's is taken, as fio does.
    const std::uint64_t dev_size = facts.is_char_device && need != 0 ? need : f.engine->geometry().size;
    f.file_bytes = dev_size;
    if (job.offset >= dev_size && s->trace.empty())
      return bad(EINVAL, path + ": offset " + std::to_string(job.offset) + " is past its end (" +
                             std::to_string(dev_size) + " bytes)");
    f.region_start = job.offset;
    f.region_bytes = per_file != 0 ? per_file : dev_size - std::min(dev_size, job.offset);
    if (f.region_start + f.region_bytes > dev_size)
      f.region_bytes = dev_size - std::min(dev_size, f.region_start);
    s->files.push_back(std::move(f));
  }
  s->sync_engine = completes_in_submit(s->files[0].engine->name());

  const std::uint32_t align = std::max<std::uint32_t>(1, s->files[0].engine->geometry().offset_alignment);
  std::uint32_t max_bytes = trace_max_bytes;
  std::uint32_t unit = 0;
  for (int d = 0; d < 2; ++d) {
    auto picker = BlockSizePicker::make(job, d, align);
    if (!picker) return bad(picker.error().code, picker.error().message);
    const bool used = d == kReadDir ? (does_reads(job.rw) || job.verify != VerifyMode::kNone) : does_writes(job.rw);
    if (used && s->trace.empty()) {
      max_bytes = std::max(max_bytes, picker->max());
      if (picker->shares().empty()) {
        unit = std::gcd(unit, picker->min());
      } else {
        for (const auto& share : picker->shares()) unit = std::gcd(unit, share.bytes);
      }
    }
    s->sizes[d] = std::move(*picker);
  }
  if (unit == 0) unit = align;
  s->unit = unit;
  if (job.seq_skip % static_cast<std::int64_t>(unit) != 0)
    return bad(EINVAL, "the offset modifier of rw= (" + std::to_string(job.seq_skip) +
                           " bytes) must be a multiple of the block size (" + std::to_string(unit) + ")");
  if (job.blockalign != 0) {
    if (job.blockalign % unit != 0)
      return bad(EINVAL, "blockalign=" + std::to_string(job.blockalign) + " must be a multiple of the smallest I/O (" +
                             std::to_string(unit) + " bytes)");
    if (job.blockalign > unit && is_random(job.rw) && job.random_distribution == Distribution::kRandom &&
        (!job.norandommap || job.random_generator == RandomGenerator::kLfsr))
      return bad(EINVAL, "blockalign above the smallest I/O needs norandommap (the random map tracks smallest-I/O blocks)");
  }
  if (auto cpus = job_cpus(job); !cpus) {
    return bad(cpus.error().code, cpus.error().message);
  } else {
    s->cpus = std::move(*cpus);
  }
  if (job.verify == VerifyMode::kCrc32c && s->trace.empty()) {
    for (int d = 0; d < 2; ++d) {
      const bool used = d == kReadDir ? does_reads(job.rw) : does_writes(job.rw);
      if (used && (!s->sizes[d]->fixed() || s->sizes[d]->min() != unit))
        return bad(EINVAL, "verify=crc32c needs one block size for reads and writes (no bsrange/bssplit)");
    }
    if (unit < kVerifyHeaderBytes)
      return bad(EINVAL, "verify=crc32c needs blocks of at least " + std::to_string(kVerifyHeaderBytes) + " bytes");
  }

  const std::uint64_t seed = job.randseed ^ (std::uint64_t{job.clone} * 0x9e3779b97f4a7c15ull);
  s->rng.reseed(seed);
  std::uint64_t total_region = 0;
  for (std::size_t i = 0; i < s->files.size(); ++i) {
    FileState& f = s->files[i];
    if (s->trace.empty() && f.region_bytes < unit)
      return bad(EINVAL, f.path + ": the region (" + std::to_string(f.region_bytes) +
                             " bytes) is smaller than one I/O of " + std::to_string(unit) + " bytes");
    f.region_bytes -= f.region_bytes % unit;
    total_region += f.region_bytes;
    f.offsets.emplace(job, f.region_start, f.region_bytes, unit, seed + i);
    if (job.zone_zbd) {
      if (auto ok = attach_zones(f, job, max_bytes); !ok) return bad(ok.error().code, ok.error().message);
    }
    if (job.verify == VerifyMode::kCrc32c) f.written.resize(f.region_bytes / unit);
    auto bufs = f.engine->buffers(s->depth, max_bytes);
    if (!bufs) return bad(bufs.error().code, bufs.error().message);
    f.buffers = *bufs;
    if (auto ok = bind_buffers(f.buffers, max_bytes, job.numa_mem_policy); !ok)
      return bad(ok.error().code, ok.error().message);
    // Written data: pseudo-random once, like fio without refill_buffers
    // (zeros would let compressing or deduplicating devices cheat).
    std::uint64_t state = seed ^ 0xd1b54a32d192ed03ull;
    for (std::byte* b : f.buffers) {
      for (std::uint32_t off = 0; off + 8 <= max_bytes; off += 8) {
        const std::uint64_t v = splitmix64(state);
        std::memcpy(b + off, &v, 8);
      }
    }
    f.batch.reserve(s->batch_submit);
  }
  for (const TraceOp& op : s->trace) {
    if (op.bytes == 0) return bad(EINVAL, "trace " + job.trace_file + " holds an operation of 0 bytes");
  }
  s->buffer_bytes = max_bytes;
  if (WriteData::wanted(job)) s->write_data.emplace(job, total_region / unit, seed);
  s->io_budget = 0;
  if (s->trace.empty() && !job.time_based) {
    // With filesize= the files hold filesize each and size= is how much the job moves.
    const std::uint64_t per_loop = job.io_size != 0 ? job.io_size
                                   : job.filesize != 0 && job.size != 0 ? job.size : total_region;
    s->io_budget = per_loop * job.loops;
  }
  s->limiter[kReadDir] = RateLimiter(job.rate_bytes[kReadDir], job.rate_iops[kReadDir]);
  s->limiter[kWriteDir] = RateLimiter(job.rate_bytes[kWriteDir], job.rate_iops[kWriteDir]);
  if (job.rate_poisson)
    for (int d = 0; d < 2; ++d) s->limiter[d].use_poisson(seed ^ (0x7f4a7c15ull + static_cast<std::uint64_t>(d)));
  s->slots.resize(s->depth);
  s->free_slots.reserve(s->depth);
  for (std::uint32_t i = s->depth; i > 0; --i) s->free_slots.push_back(i - 1);
  s->completions.resize(s->depth);
  s->steady = SteadyState(job);
  if (job.flow != 0 && options.flows != nullptr)
    s->flow = FlowMember(&options.flows->join(job.flow_id, static_cast<std::uint32_t>(job.flow)),
                         static_cast<std::uint32_t>(job.flow));
  s->recorder.emplace(s->result, options.collect_logs);
  return std::unique_ptr<JobWorker>(new JobWorker(std::move(s)));
}

}  // namespace cxlpool::io
