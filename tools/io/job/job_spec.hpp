// SPDX-License-Identifier: Apache-2.0
// One cxlpool-io job after parsing: every option resolved to a typed value,
// sizes in bytes, times in nanoseconds. The parser (job_file.hpp) fills it
// from fio-syntax INI text; the runner only reads it. Defaults are fio's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cxlpool::io {

enum class RwMode : std::uint8_t { kRead, kWrite, kRandRead, kRandWrite, kReadWrite, kRandReadWrite };

bool is_random(RwMode mode);
bool does_reads(RwMode mode);
bool does_writes(RwMode mode);
const char* rw_mode_name(RwMode mode);  // fio's spelling: "randread", "rw", ...
// The mode fio's rw= names, "readwrite" included; nullopt for any other text.
std::optional<RwMode> rw_mode_from_name(std::string_view name);

enum class Distribution : std::uint8_t { kRandom, kZipf, kPareto, kNormal, kZoned };

enum class VerifyMode : std::uint8_t { kNone, kCrc32c };

// fio's random_generator: which source draws random offsets. tausworthe and
// tausworthe64 are fio's uniform generators (cxlpool-io draws with its own
// uniform generator for both); lfsr is a full-period sequence that touches
// every block once per pass with no random map, which the runner gives by
// keeping the map even under norandommap.
enum class RandomGenerator : std::uint8_t { kTausworthe, kTausworthe64, kLfsr };

// ss=: what steady-state detection watches (fio's iops, iops_slope, bw,
// bw_slope).
enum class SteadyMetric : std::uint8_t { kNone, kIops, kIopsSlope, kBw, kBwSlope };

// exit_what: which jobs an exitall job's end stops: its reporting group,
// its stonewall group, or every job (those not started yet never start).
enum class ExitWhat : std::uint8_t { kGroup, kStonewall, kAll };

// numa_mem_policy: where the job's I/O buffers live.
enum class MemPolicy : std::uint8_t { kDefault, kPrefer, kBind, kInterleave, kLocal };

struct NumaMemPolicy {
  MemPolicy mode = MemPolicy::kDefault;
  std::vector<int> nodes;  // prefer: one node; bind/interleave: one or more
};

// One zone of random_distribution=zoned: `access_percent` of the random
// I/O lands in the next `range_percent` of the region.
struct AccessZone {
  double access_percent = 0;
  double range_percent = 0;
};

// Index 0 is reads, 1 is writes, as in fio's "bs=4k,64k" / "rate=1m,2m".
inline constexpr int kReadDir = 0;
inline constexpr int kWriteDir = 1;

struct BlockSizeShare {
  std::uint32_t bytes = 0;
  std::uint32_t percent = 0;  // shares with 0 split what the others leave, as fio does
};

// One entry of cmdprio_bssplit: `percent` of the I/Os of `bytes` get the
// priority (class, level); class -1 takes cmdprio_class/cmdprio.
struct PrioritySplit {
  std::uint32_t bytes = 0;
  std::uint32_t percent = 0;
  int prio_class = -1;
  int level = -1;
};

struct JobSpec {
  std::string name;        // the section name
  int line = 0;            // line of the section header, for messages
  int group = 0;           // stonewall group: jobs of group g start after every job of g-1 ends
  int report_group = 0;    // reporting group: a new one at each stonewall and new_group
  bool new_group = false;
  bool stonewall = false;  // this section starts a new group (kept so overrides can regroup)
  std::uint32_t clone = 0; // 0..numjobs-1 after numjobs expansion

  std::string ioengine = "psync";  // psync | libaio | io_uring | mmap | cuda | kvstore
  std::map<std::string, std::string> engine_options;  // engine-specific keys, validated by the parser

  std::vector<std::string> filenames;  // from filename= (':'-separated) or directory= + generated names
  std::string directory;
  std::uint32_t nrfiles = 1;           // generated names per clone when filename= is absent
  bool filenames_generated = false;    // names are jobname.clone.filenumber (regenerated on overrides)
  std::uint64_t size = 0;        // bytes per file region; 0 = the file's size
  std::uint64_t offset = 0;
  std::uint64_t io_size = 0;     // bytes to transfer; 0 = size
  RwMode rw = RwMode::kRead;
  std::uint32_t rwmixread = 50;  // percent of reads for rw/randrw

  std::uint32_t bs[2] = {4096, 4096};
  std::uint32_t bsrange_min[2] = {0, 0};  // both 0: no range
  std::uint32_t bsrange_max[2] = {0, 0};
  std::vector<BlockSizeShare> bssplit[2];

  std::uint32_t iodepth = 1;
  std::uint32_t iodepth_batch_submit = 1;
  std::uint32_t iodepth_batch_complete_min = 1;
  // Completions taken per reap; 0 = complete_min, fio's default (so 1: the
  // queue is refilled after every completion and stays full).
  std::uint32_t iodepth_batch_complete_max = 0;
  // Once the queue is full, reap until at most this many are in flight
  // before refilling (fio's low-water mark); 0 = iodepth.
  std::uint32_t iodepth_low = 0;
  bool direct = false;

  std::uint64_t runtime_ns = 0;  // 0 = until io_size is done
  bool time_based = false;
  std::uint64_t ramp_time_ns = 0;
  std::uint64_t rate_bytes[2] = {0, 0};  // bytes per second; 0 = unlimited
  std::uint64_t rate_iops[2] = {0, 0};
  std::uint64_t thinktime_ns = 0;
  std::uint32_t thinktime_blocks = 1;

  Distribution random_distribution = Distribution::kRandom;
  double distribution_param = 0;  // zipf theta, pareto h, normal deviation in percent
  std::vector<AccessZone> zones;  // random_distribution=zoned
  bool norandommap = false;
  std::uint64_t randseed = 0x6a09e667f3bcc908ull;
  bool randrepeat = true;         // false: the seed comes from the clock (a different run each time)
  RandomGenerator random_generator = RandomGenerator::kTausworthe;
  std::uint64_t blockalign = 0;   // random offsets aligned to this; 0 = the smallest I/O size

  // rw=read:-8k / write:112k: bytes added to the next sequential offset
  // after each I/O (negative goes backwards); randread:8: I/Os issued
  // sequentially after each random offset is drawn (fio's rw_sequencer).
  std::int64_t seq_skip = 0;
  std::uint32_t random_run = 1;

  std::uint64_t filesize = 0;     // bytes per file; size= is then the job's total
  // zonemode=strided: zonesize bytes of I/O in one zone, then the next zone
  // zoneskip bytes further on (zonerange: a zone's length, default zonesize).
  bool zone_strided = false;
  std::uint64_t zonesize = 0;
  std::uint64_t zonerange = 0;
  std::uint64_t zoneskip = 0;
  // zonemode=zbd: zones of zonesize bytes with a write pointer each,
  // emulated on regular files and conventional block devices (zone_table.hpp).
  bool zone_zbd = false;
  std::uint64_t zonecapacity = 0;  // writable bytes of a zone; 0 = zonesize
  std::uint32_t max_open_zones = 0;  // 0 = no limit
  bool read_beyond_wp = false;
  bool log_offset = false;        // logs carry each I/O's offset
  // I/O priorities (ioprio_set(2)): prio/prioclass for all the job's I/O
  // (-1: unset); cmdprio_* per I/O, libaio and io_uring only.
  int prio = -1;
  int prioclass = -1;
  std::uint32_t cmdprio_percentage[2] = {0, 0};
  int cmdprio_class[2] = {-1, -1};  // -1: the highest class (RT)
  int cmdprio[2] = {-1, -1};        // -1: level 0
  std::vector<PrioritySplit> cmdprio_bssplit[2];
  bool log_prio = false;
  // latency_target: search the highest depth (up to iodepth) at which
  // latency_percentile % of a latency_window's I/Os take at most the
  // target; 0 = off.
  std::uint64_t latency_target_ns = 0;
  std::uint64_t latency_window_ns = 0;
  double latency_percentile = 100;
  // Deduplicable / compressible write data (write_data.hpp); 0 = off.
  std::uint32_t dedupe_percentage = 0;
  bool dedupe_working_set = false;             // dedupe_mode=working_set (else repeat)
  std::uint32_t dedupe_working_set_percentage = 5;
  bool dedupe_global = false;
  std::uint32_t buffer_compress_percentage = 0;
  std::uint32_t buffer_compress_chunk = 512;   // 0: one region per buffer          // logs carry each I/O's priority value (else 1 for RT, 0 otherwise)
  bool allow_file_create = true;
  std::uint64_t offset_increment = 0;  // clone n starts at offset + n * offset_increment
  std::uint64_t loops = 1;        // passes over the job's I/O budget
  std::uint64_t number_ios = 0;   // stop after this many I/Os; 0 = no limit
  std::uint64_t startdelay_ns = 0;
  bool gtod_reduce = false;       // no per-I/O latency (fio: fewer clock reads, no lat stats)
  std::vector<int> cpus_allowed;  // CPUs the job thread may run on; empty = any
  std::vector<int> numa_cpu_nodes;
  NumaMemPolicy numa_mem_policy;
  bool io_submit_offload = false; // io_submit_mode=offload
  bool rate_poisson = false;      // rate_process=poisson
  std::uint64_t ratemin_bytes[2] = {0, 0};  // the job fails below these over a ratecycle
  std::uint64_t ratemin_iops[2] = {0, 0};
  std::uint64_t ratecycle_ns = 1000000000ull;
  SteadyMetric ss_metric = SteadyMetric::kNone;  // ss=: end the job at steady state
  double ss_limit = 0;
  bool ss_percent = false;        // the limit is a percentage of the mean
  std::uint64_t ss_dur_ns = 0;
  std::uint64_t ss_ramp_ns = 0;
  std::string wait_for;           // start after every clone of this job has ended
  bool exitall = false;           // when this job ends, the jobs exit_what names stop
  ExitWhat exit_what = ExitWhat::kGroup;
  std::int32_t flow_id = 0;       // flow=: jobs of one flow_id keep their I/O in the weights' ratio
  std::int32_t flow = 0;
  std::uint64_t flow_sleep_ns = 0;

  bool fixedbufs = false;
  bool registerfiles = false;
  bool sqthread_poll = false;
  std::uint32_t sqthread_poll_cpu = 0xffffffffu;  // 0xffffffff: not pinned
  bool hipri = false;

  VerifyMode verify = VerifyMode::kNone;
  std::uint64_t verify_backlog = 0;  // verify every N written blocks as the job goes (0: at the end)
  bool verify_dump = false;          // a block failing verification is written to FILE.OFFSET.received

  std::vector<double> percentile_list = {1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  std::string write_lat_log;   // log file prefix; empty = off
  std::string write_bw_log;
  std::string write_iops_log;
  std::string write_hist_log;
  std::uint64_t log_avg_msec = 0;
  std::uint64_t log_hist_msec = 0;

  bool group_reporting = false;
  std::uint32_t numjobs = 1;   // kept for reporting; the parser has already expanded clones

  std::string trace_file;      // read_iolog= / trace replay: replaces the generated offsets
  std::string trace_format;    // "fio-iolog" | "bpftrace" | "" (detect)
  bool replay_no_stall = false; // replay as fast as possible, ignoring the trace's timing
};

}  // namespace cxlpool::io
