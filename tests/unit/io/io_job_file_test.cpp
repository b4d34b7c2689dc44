// SPDX-License-Identifier: Apache-2.0
// Job file parsing: every option into its JobSpec field, fio's units,
// per-direction values, numjobs/stonewall expansion, file names, ${ENV},
// and errors that name the option and its line.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "job/job_file.hpp"
#include "job/value_parsers.hpp"

namespace cxlpool::io {
namespace {

EnvLookup fake_env(std::map<std::string, std::string> vars = {}) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

JobFile parse_ok(const std::string& text, const EnvLookup& env = fake_env()) {
  auto file = parse_job_file(text, "t.fio", env);
  EXPECT_TRUE(file.has_value()) << (file ? "" : file.error().message);
  return file ? *file : JobFile{};
}

std::string parse_error(const std::string& text, const EnvLookup& env = fake_env()) {
  auto file = parse_job_file(text, "t.fio", env);
  EXPECT_FALSE(file.has_value()) << "parsed: " << text;
  if (file) return {};
  EXPECT_EQ(file.error().code, EINVAL);
  return file.error().message;
}

JobSpec one_job(const std::string& options) {
  auto file = parse_ok("[j]\nfilename=/dev/null\n" + options);
  EXPECT_EQ(file.jobs.size(), 1u);
  return file.jobs.empty() ? JobSpec{} : file.jobs[0];
}

TEST(IoJobFile, DefaultsAreFios) {
  JobSpec j = one_job("");
  EXPECT_EQ(j.name, "j");
  EXPECT_EQ(j.line, 1);
  EXPECT_EQ(j.ioengine, "psync");
  EXPECT_EQ(j.rw, RwMode::kRead);
  EXPECT_EQ(j.bs[0], 4096u);
  EXPECT_EQ(j.bs[1], 4096u);
  EXPECT_EQ(j.iodepth, 1u);
  EXPECT_FALSE(j.direct);
  EXPECT_EQ(j.rwmixread, 50u);
  EXPECT_EQ(j.percentile_list.size(), 17u);
  EXPECT_EQ(j.filenames, std::vector<std::string>{"/dev/null"});
  EXPECT_FALSE(j.filenames_generated);
}

TEST(IoJobFile, EveryOptionReachesItsField) {
  auto file = parse_ok(R"(; a job using every option
[global]
ioengine=io_uring
direct=1
group_reporting
[all]
name=renamed
description=every option once
thread
directory=/var/tmp
filename=a.dat
size=1g
offset=4k
io_size=2g
rw=randrw
rwmixread=70
bs=4k,64k
bsrange=4k-16k,8k-32k
iodepth=32
iodepth_batch_submit=8
iodepth_batch_complete_min=4
runtime=30
time_based
ramp_time=2s
rate=10m,5m
rate_iops=1000,500
thinktime=250
thinktime_blocks=4
random_distribution=zipf:1.2
norandommap
randseed=42
fixedbufs
registerfiles=1
sqthread_poll
sqthread_poll_cpu=3
hipri
verify=crc32c
percentile_list=99.9:50:99
write_lat_log=lat
write_bw_log=bw
write_iops_log=iops
write_hist_log=hist
log_avg_msec=100
log_hist_msec=1000
numjobs=1
stonewall
read_iolog=/tmp/trace.log
trace_format=bpftrace
replay_no_stall
)");
  ASSERT_EQ(file.jobs.size(), 1u);
  const JobSpec& j = file.jobs[0];
  EXPECT_EQ(j.name, "renamed");
  EXPECT_EQ(j.ioengine, "io_uring");
  EXPECT_TRUE(j.direct);
  EXPECT_TRUE(j.group_reporting);
  EXPECT_EQ(j.directory, "/var/tmp");
  EXPECT_EQ(j.filenames, std::vector<std::string>{"/var/tmp/a.dat"});
  EXPECT_EQ(j.size, 1ull << 30);
  EXPECT_EQ(j.offset, 4096u);
  EXPECT_EQ(j.io_size, 2ull << 30);
  EXPECT_EQ(j.rw, RwMode::kRandReadWrite);
  EXPECT_EQ(j.rwmixread, 70u);
  EXPECT_EQ(j.bs[kReadDir], 4096u);
  EXPECT_EQ(j.bs[kWriteDir], 65536u);
  EXPECT_EQ(j.bsrange_min[kReadDir], 4096u);
  EXPECT_EQ(j.bsrange_max[kReadDir], 16384u);
  EXPECT_EQ(j.bsrange_min[kWriteDir], 8192u);
  EXPECT_EQ(j.bsrange_max[kWriteDir], 32768u);
  EXPECT_EQ(j.iodepth, 32u);
  EXPECT_EQ(j.iodepth_batch_submit, 8u);
  EXPECT_EQ(j.iodepth_batch_complete_min, 4u);
  EXPECT_EQ(j.runtime_ns, 30'000'000'000ull);
  EXPECT_TRUE(j.time_based);
  EXPECT_EQ(j.ramp_time_ns, 2'000'000'000ull);
  EXPECT_EQ(j.rate_bytes[kReadDir], 10ull << 20);
  EXPECT_EQ(j.rate_bytes[kWriteDir], 5ull << 20);
  EXPECT_EQ(j.rate_iops[kReadDir], 1000u);
  EXPECT_EQ(j.rate_iops[kWriteDir], 500u);
  EXPECT_EQ(j.thinktime_ns, 250'000u);  // fio's thinktime unit is microseconds
  EXPECT_EQ(j.thinktime_blocks, 4u);
  EXPECT_EQ(j.random_distribution, Distribution::kZipf);
  EXPECT_DOUBLE_EQ(j.distribution_param, 1.2);
  EXPECT_TRUE(j.norandommap);
  EXPECT_EQ(j.randseed, 42u);
  EXPECT_TRUE(j.fixedbufs);
  EXPECT_TRUE(j.registerfiles);
  EXPECT_TRUE(j.sqthread_poll);
  EXPECT_EQ(j.sqthread_poll_cpu, 3u);
  EXPECT_TRUE(j.hipri);
  EXPECT_EQ(j.verify, VerifyMode::kCrc32c);
  EXPECT_EQ(j.percentile_list, (std::vector<double>{50, 99, 99.9}));
  EXPECT_EQ(j.write_lat_log, "lat");
  EXPECT_EQ(j.write_bw_log, "bw");
  EXPECT_EQ(j.write_iops_log, "iops");
  EXPECT_EQ(j.write_hist_log, "hist");
  EXPECT_EQ(j.log_avg_msec, 100u);
  EXPECT_EQ(j.log_hist_msec, 1000u);
  EXPECT_TRUE(j.stonewall);
  EXPECT_EQ(j.trace_file, "/tmp/trace.log");
  EXPECT_EQ(j.trace_format, "bpftrace");
  EXPECT_TRUE(j.replay_no_stall);
}

TEST(IoJobFile, SizeSuffixesFollowFiosKbBase) {
  struct Case {
    const char* text;
    std::uint32_t kb_base;
    std::uint64_t bytes;
  };
  // Checked against fio 3.33 (--create_only, file sizes): with the default
  // kb_base=1024 the IEC spellings are powers of 1000.
  const Case cases[] = {
      {"4096", 1024, 4096},       {"4k", 1024, 4096},        {"4K", 1024, 4096},
      {"4kb", 1024, 4096},        {"4KB", 1024, 4096},       {"4ki", 1024, 4096},
      {"4KiB", 1024, 4000},       {"1m", 1024, 1 << 20},     {"1MiB", 1024, 1000000},
      {"2g", 1024, 2ull << 30},   {"1t", 1024, 1ull << 40},  {"1p", 1024, 1ull << 50},
      {"0x1000", 1024, 4096},     {"4096b", 1024, 4096},     {"4KiB", 1000, 4096},
      {"4k", 1000, 4000},         {"1MiB", 1000, 1 << 20},
  };
  for (const auto& c : cases) {
    auto bytes = parse_size(c.text, c.kb_base);
    ASSERT_TRUE(bytes) << c.text << ": " << bytes.error().message;
    EXPECT_EQ(*bytes, c.bytes) << c.text << " kb_base=" << c.kb_base;
  }
  for (const char* bad : {"", "k", "4x", "1.5k", "4kk", "-1", "50%", "99999999999999999999"}) {
    EXPECT_FALSE(parse_size(bad, 1024)) << bad;
  }
  EXPECT_EQ(one_job("kb_base=1000\nsize=4k\n").size, 4000u);
}

TEST(IoJobFile, TimeSuffixesAndDefaultUnits) {
  EXPECT_EQ(one_job("runtime=10\n").runtime_ns, 10'000'000'000ull);
  EXPECT_EQ(one_job("runtime=500ms\n").runtime_ns, 500'000'000ull);
  EXPECT_EQ(one_job("runtime=1m\n").runtime_ns, 60'000'000'000ull);
  EXPECT_EQ(one_job("runtime=1h\n").runtime_ns, 3600'000'000'000ull);
  EXPECT_EQ(one_job("ramp_time=3\n").ramp_time_ns, 3'000'000'000ull);
  EXPECT_EQ(one_job("thinktime=100\n").thinktime_ns, 100'000u);
  EXPECT_EQ(one_job("thinktime=2ms\n").thinktime_ns, 2'000'000u);
  EXPECT_EQ(one_job("thinktime=7us\n").thinktime_ns, 7'000u);
  EXPECT_EQ(one_job("timeout=5s\n").runtime_ns, 5'000'000'000ull);
  EXPECT_NE(parse_error("[j]\nruntime=5q\n").find("t.fio:2: option 'runtime': '5q': unknown time suffix"),
            std::string::npos);
}

TEST(IoJobFile, PerDirectionValues) {
  JobSpec j = one_job("bs=,8k\n");
  EXPECT_EQ(j.bs[kReadDir], 4096u);
  EXPECT_EQ(j.bs[kWriteDir], 8192u);
  j = one_job("bs=16k,\n");
  EXPECT_EQ(j.bs[kReadDir], 16384u);
  EXPECT_EQ(j.bs[kWriteDir], 4096u);
  j = one_job("blocksize=64k\n");
  EXPECT_EQ(j.bs[kReadDir], 65536u);
  EXPECT_EQ(j.bs[kWriteDir], 65536u);
  j = one_job("rate=,1m\nrate_iops=100\n");
  EXPECT_EQ(j.rate_bytes[kReadDir], 0u);
  EXPECT_EQ(j.rate_bytes[kWriteDir], 1u << 20);
  EXPECT_EQ(j.rate_iops[kReadDir], 100u);
  EXPECT_EQ(j.rate_iops[kWriteDir], 100u);
  EXPECT_NE(parse_error("[j]\nbs=4k,8k,16k\n").find("t.fio:2: option 'bs': a third (trim) value is not supported"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nbs=0\n").find("option 'bs': block size must be greater than 0"), std::string::npos);
}

TEST(IoJobFile, Bssplit) {
  JobSpec j = one_job("bssplit=4k/10:64k/50:1m\n");
  ASSERT_EQ(j.bssplit[kReadDir].size(), 3u);
  EXPECT_EQ(j.bssplit[kReadDir][0].bytes, 4096u);
  EXPECT_EQ(j.bssplit[kReadDir][0].percent, 10u);
  EXPECT_EQ(j.bssplit[kReadDir][1].percent, 50u);
  EXPECT_EQ(j.bssplit[kReadDir][2].bytes, 1u << 20);
  EXPECT_EQ(j.bssplit[kReadDir][2].percent, 40u);  // what the others leave
  EXPECT_EQ(j.bssplit[kWriteDir].size(), 3u);

  j = one_job("bssplit=4k:8k:16k,64k/100\n");
  ASSERT_EQ(j.bssplit[kReadDir].size(), 3u);
  std::uint32_t total = 0;
  for (const auto& s : j.bssplit[kReadDir]) total += s.percent;
  EXPECT_EQ(total, 100u);  // 34 + 33 + 33
  ASSERT_EQ(j.bssplit[kWriteDir].size(), 1u);
  EXPECT_EQ(j.bssplit[kWriteDir][0].bytes, 65536u);

  j = one_job("bssplit=4k/0:8k/100\n");
  ASSERT_EQ(j.bssplit[kReadDir].size(), 1u);  // a 0% share is never picked
  EXPECT_NE(parse_error("[j]\nbssplit=4k/60:8k/50\n").find("t.fio:2: option 'bssplit': percentages add up to 110"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nbssplit=4k/60:8k/30\n").find("add up to 90, not 100"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nbssplit=4k/10:\n").find("empty entry"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nbssplit=4k\nbsrange=4k-8k\n").find("t.fio:2: option 'bssplit': cannot be combined"),
            std::string::npos);
}

TEST(IoJobFile, BsrangeAndDistributions) {
  EXPECT_NE(parse_error("[j]\nbsrange=16k-4k\n").find("minimum is larger"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nbsrange=16k\n").find("not min-max"), std::string::npos);

  struct Case {
    const char* text;
    Distribution kind;
    double param;
  };
  const Case cases[] = {
      {"random", Distribution::kRandom, 0}, {"zipf:1.2", Distribution::kZipf, 1.2},
      {"zipf", Distribution::kZipf, 1.1},   {"pareto:0.3", Distribution::kPareto, 0.3},
      {"pareto", Distribution::kPareto, 0.2}, {"normal:5", Distribution::kNormal, 5},
      {"gauss:2.5", Distribution::kNormal, 2.5},
  };
  for (const auto& c : cases) {
    JobSpec j = one_job(std::string("random_distribution=") + c.text + "\n");
    EXPECT_EQ(j.random_distribution, c.kind) << c.text;
    EXPECT_DOUBLE_EQ(j.distribution_param, c.param) << c.text;
  }
  EXPECT_NE(parse_error("[j]\nrandom_distribution=zipf:1\n").find("zipf theta"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nrandom_distribution=pareto:1.5\n").find("pareto h"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nrandom_distribution=normal:100\n").find("normal deviation"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nrandom_distribution=zoned_abs:50/10G:50/20G\n").find("not supported by cxlpool-io"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nrandom_distribution=lognormal\n").find("unknown distribution"), std::string::npos);
}

TEST(IoJobFile, RwModesAndMixes) {
  const std::pair<const char*, RwMode> modes[] = {
      {"read", RwMode::kRead},         {"write", RwMode::kWrite}, {"randread", RwMode::kRandRead},
      {"randwrite", RwMode::kRandWrite}, {"rw", RwMode::kReadWrite}, {"readwrite", RwMode::kReadWrite},
      {"randrw", RwMode::kRandReadWrite},
  };
  for (const auto& [text, mode] : modes) EXPECT_EQ(one_job(std::string("rw=") + text + "\n").rw, mode) << text;
  EXPECT_EQ(one_job("rwmixwrite=30\n").rwmixread, 70u);
  EXPECT_NE(parse_error("[j]\nrw=trim\n").find("option 'rw': 'trim' is not supported by cxlpool-io"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nrw=randread:0\n").find("must be 1 or more"), std::string::npos);
  EXPECT_NE(parse_error("[j]\nrwmixread=101\n").find("t.fio:2: option 'rwmixread': 101 is outside [0, 100]"),
            std::string::npos);
  EXPECT_TRUE(is_random(RwMode::kRandRead));
  EXPECT_FALSE(is_random(RwMode::kReadWrite));
  EXPECT_TRUE(does_reads(RwMode::kRandReadWrite));
  EXPECT_TRUE(does_writes(RwMode::kReadWrite));
  EXPECT_FALSE(does_writes(RwMode::kRandRead));
  EXPECT_STREQ(rw_mode_name(RwMode::kRandReadWrite), "randrw");
}

TEST(IoJobFile, NumjobsAndStonewallMakeClonesAndGroups) {
  auto file = parse_ok(R"([global]
size=1m
directory=/var/tmp
[a]
numjobs=2
[b]
[c]
stonewall
numjobs=3
[d]
)");
  ASSERT_EQ(file.jobs.size(), 7u);
  EXPECT_EQ(file.groups, 2);
  const std::pair<const char*, int> expect[] = {{"a", 0}, {"a", 0}, {"b", 0}, {"c", 1}, {"c", 1}, {"c", 1}, {"d", 1}};
  for (std::size_t i = 0; i < file.jobs.size(); ++i) {
    EXPECT_EQ(file.jobs[i].name, expect[i].first) << i;
    EXPECT_EQ(file.jobs[i].group, expect[i].second) << i;
  }
  EXPECT_EQ(file.jobs[1].clone, 1u);
  EXPECT_EQ(file.jobs[5].clone, 2u);
  // fio's generated names: jobname.clone.filenumber, under directory=.
  EXPECT_EQ(file.jobs[0].filenames, std::vector<std::string>{"/var/tmp/a.0.0"});
  EXPECT_EQ(file.jobs[1].filenames, std::vector<std::string>{"/var/tmp/a.1.0"});
  EXPECT_EQ(file.jobs[5].filenames, std::vector<std::string>{"/var/tmp/c.2.0"});
  EXPECT_TRUE(file.jobs[0].filenames_generated);

  file = parse_ok("[f]\nnrfiles=2\nnumjobs=2\n");
  ASSERT_EQ(file.jobs.size(), 2u);
  EXPECT_EQ(file.jobs[1].filenames, (std::vector<std::string>{"f.1.0", "f.1.1"}));

  // A stonewall on the first job opens no empty group.
  file = parse_ok("[a]\nstonewall\n[b]\nwait_for_previous\n");
  EXPECT_EQ(file.groups, 2);
  EXPECT_EQ(file.jobs[0].group, 0);
  EXPECT_EQ(file.jobs[1].group, 1);
}

TEST(IoJobFile, FilenamesAndDirectory) {
  JobSpec j = one_job("filename=/a:b\\:c:rel\ndirectory=/d\n");
  // filename= was set first; the job keeps it (the header line's /dev/null is replaced).
  EXPECT_EQ(j.filenames, (std::vector<std::string>{"/a", "/d/b:c", "/d/rel"}));
  auto file = parse_ok("[j]\nfilename=x\nnumjobs=2\n");
  EXPECT_EQ(file.jobs[0].filenames, file.jobs[1].filenames);  // clones share an explicit file, as in fio
  EXPECT_NE(parse_error("[j]\nfilename=a::b\n").find("empty file name"), std::string::npos);
  EXPECT_NE(parse_error("[j]\ndirectory=/a:/b\n").find("several directories"), std::string::npos);
}

TEST(IoJobFile, CommentsGlobalsAndEnvironment) {
  auto file = parse_ok(R"(# comment
; another
[global]
bs=${BS}   ; trailing comment
[first]   # header comment
filename=${DEV}
rw=randread
[global]
iodepth=$ncpus
[second]
filename=/x
)",
                       fake_env({{"BS", "64k"}, {"DEV", "/dev/nvme0n1"}}));
  ASSERT_EQ(file.jobs.size(), 2u);
  EXPECT_EQ(file.jobs[0].bs[0], 65536u);
  EXPECT_EQ(file.jobs[0].filenames, std::vector<std::string>{"/dev/nvme0n1"});
  EXPECT_EQ(file.jobs[0].iodepth, 1u);   // the second [global] only reaches later jobs
  EXPECT_GE(file.jobs[1].iodepth, 1u);
  EXPECT_EQ(file.jobs[1].bs[0], 65536u);
  EXPECT_EQ(file.jobs[1].rw, RwMode::kRead);
  EXPECT_NE(parse_error("[j]\nfilename=${NOPE}\n").find("t.fio:2: environment variable 'NOPE' is not set"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nfilename=${OPEN\n").find("t.fio:2: unterminated"), std::string::npos);
  auto real = parse_job_file("[j]\nfilename=${HOME}\n", "t.fio", process_environment());
  ASSERT_TRUE(real) << real.error().message;
  EXPECT_FALSE(real->jobs[0].filenames[0].empty());
}

TEST(IoJobFile, FlagsAndBatches) {
  JobSpec j = one_job("direct\ntime_based=0\nbuffered=0\n");
  EXPECT_TRUE(j.direct);
  EXPECT_FALSE(j.time_based);
  EXPECT_FALSE(one_job("buffered\n").direct);
  EXPECT_NE(parse_error("[j]\ndirect=2\n").find("t.fio:2: option 'direct': '2' is not 0 or 1"), std::string::npos);
  j = one_job("iodepth=16\niodepth_batch=0\niodepth_batch_complete=64\n");
  EXPECT_EQ(j.iodepth_batch_submit, 16u);        // 0 means iodepth, as in fio
  EXPECT_EQ(j.iodepth_batch_complete_min, 16u);  // clamped to iodepth
  j = one_job("iodepth=4\niodepth_batch_submit=8\n");
  EXPECT_EQ(j.iodepth_batch_submit, 4u);
  // fio's defaults: one completion per reap, refill from a full queue.
  j = one_job("iodepth=32\n");
  EXPECT_EQ(j.iodepth_batch_complete_max, 1u);
  EXPECT_EQ(j.iodepth_low, 32u);
  j = one_job("iodepth=32\niodepth_batch_complete_min=4\n");
  EXPECT_EQ(j.iodepth_batch_complete_max, 4u);  // never below the minimum
  j = one_job("iodepth=32\niodepth_batch_complete_max=64\niodepth_low=8\n");
  EXPECT_EQ(j.iodepth_batch_complete_max, 32u);  // clamped to iodepth
  EXPECT_EQ(j.iodepth_low, 8u);
  j = one_job("iodepth=8\niodepth_low=0\n");
  EXPECT_EQ(j.iodepth_low, 8u);
  EXPECT_NE(parse_error("[j]\niodepth_low=-1\n").find("t.fio:2: option 'iodepth_low'"), std::string::npos);
}

TEST(IoJobFile, LogsNamedAfterTheJobWhenBare) {
  auto file = parse_ok("[global]\nwrite_lat_log\n[first]\nwrite_hist_log\n[second]\nwrite_bw_log=bw\n");
  EXPECT_EQ(file.jobs[0].write_lat_log, "first");
  EXPECT_EQ(file.jobs[0].write_hist_log, "first");
  EXPECT_EQ(file.jobs[1].write_lat_log, "second");
  EXPECT_EQ(file.jobs[1].write_bw_log, "bw");
  EXPECT_EQ(one_job("percentile_list=99:99.9\n").percentile_list, (std::vector<double>{99, 99.9}));
  EXPECT_NE(parse_error("[j]\npercentile_list=0:50\n").find("outside (0, 100]"), std::string::npos);
}

TEST(IoJobFile, EngineOptionsAreCheckedAgainstTheEngine) {
  JobSpec j = one_job("ioengine=kvstore\nkv_socket=/run/cxlpool.sock\nkv_namespace=llama\nkv_chunk_tokens=128\n");
  EXPECT_EQ(j.engine_options.at("kv_socket"), "/run/cxlpool.sock");
  EXPECT_EQ(j.engine_options.at("kv_chunk_tokens"), "128");
  j = one_job("ioengine=cuda\nmem=cudadevice\n");
  EXPECT_EQ(j.engine_options.at("mem"), "cudadevice");
  // Set in [global] for an engine that takes it, then used by a job whose engine does not.
  EXPECT_NE(parse_error("[global]\nmem=cudahost\n[j]\nioengine=psync\n")
                .find("t.fio:2: option 'mem': not an option of ioengine=psync (only of ioengine=cuda)"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nioengine=cuda\nmem=malloc\n").find("t.fio:3: option 'mem': 'malloc' is not cudahost"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nioengine=kvstore\nkv_chunk_tokens=0\n").find("t.fio:3: option 'kv_chunk_tokens'"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nioengine=falloc\n").find("t.fio:2: option 'ioengine': 'falloc' is not supported by cxlpool-io"),
            std::string::npos);
  EXPECT_NE(parse_error("[global]\nfixedbufs\n[j]\nioengine=libaio\n")
                .find("t.fio:2: option 'fixedbufs': only for ioengine=io_uring (this job uses libaio)"),
            std::string::npos);
  EXPECT_NE(parse_error("[j]\nioengine=io_uring\nhipri\n").find("t.fio:3: option 'hipri': needs direct=1"),
            std::string::npos);
  EXPECT_TRUE(parse_job_file("[j]\nioengine=libaio\nfixedbufs=0\n", "t.fio", fake_env()));
}

TEST(IoJobFile, ErrorsNameTheOptionAndLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"[j]\nsize=1m\nbogus=1\n", "t.fio:3: option 'bogus': unknown"},
      {"[j]\n\nfsync=2\n", "t.fio:3: option 'fsync': not supported by cxlpool-io"},
      {"size=1m\n[j]\n", "t.fio:1: option outside a section"},
      {"[j\nsize=1m\n", "t.fio:1: section header without ']'"},
      {"[ ]\n", "t.fio:1: empty section name"},
      {"[global]\nsize=1m\n", "t.fio: no job sections"},
      {"[j]\n=4\n", "t.fio:2: missing option name"},
      {"[j]\nsize\n", "t.fio:2: option 'size': needs a value"},
      {"[j]\niodepth=0\n", "t.fio:2: option 'iodepth': 0 is outside [1, 65536]"},
      {"[j]\nnumjobs=abc\n", "t.fio:2: option 'numjobs': 'abc' is not a number"},
      {"[j]\nverify=md5\n", "t.fio:2: option 'verify': 'md5' is not supported by cxlpool-io (crc32c or 0)"},
      {"[j]\nreplay_no_stall\n", "t.fio:2: option 'replay_no_stall': needs read_iolog= (a trace to replay)"},
      {"[j]\nread_iolog=x\ntrace_format=blktrace\n",
       "t.fio:3: option 'trace_format': 'blktrace' is not bpftrace or fio-iolog"},
      {"[j]\nsize=10%\n", "t.fio:2: option 'size': percentages ('10%') are not supported by cxlpool-io"},
  };
  for (const Case& c : cases) EXPECT_EQ(parse_error(c.text), c.error) << c.text;
}

TEST(IoJobFile, OverridesApplyToEveryJobWithTheSameChecks) {
  auto file = parse_ok("[a]\nnumjobs=2\nsize=1m\n[b]\nstonewall\nfilename=x\ndirectory=/d\n");
  ASSERT_TRUE(apply_overrides(file, {"size=4m", "iodepth=8", "numjobs=3", "direct"}));
  ASSERT_EQ(file.jobs.size(), 6u);
  EXPECT_EQ(file.groups, 2);
  for (const auto& j : file.jobs) {
    EXPECT_EQ(j.size, 4u << 20);
    EXPECT_EQ(j.iodepth, 8u);
    EXPECT_TRUE(j.direct);
    EXPECT_EQ(j.numjobs, 3u);
  }
  EXPECT_EQ(file.jobs[2].filenames, std::vector<std::string>{"a.2.0"});
  EXPECT_EQ(file.jobs[3].group, 1);
  EXPECT_EQ(file.jobs[3].filenames, std::vector<std::string>{"/d/x"});

  ASSERT_TRUE(apply_overrides(file, {"directory=/e"}));
  EXPECT_EQ(file.jobs[0].filenames, std::vector<std::string>{"/e/a.0.0"});
  EXPECT_EQ(file.jobs[3].filenames, std::vector<std::string>{"/e/x"});

  auto bad = apply_overrides(file, {"frobnicate=1"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "command line: option 'frobnicate': unknown");
  bad = apply_overrides(file, {"hipri"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "command line: option 'hipri': only for ioengine=io_uring (this job uses psync)");
}

}  // namespace
}  // namespace cxlpool::io
