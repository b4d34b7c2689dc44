// SPDX-License-Identifier: Apache-2.0
// The fio options and syntax that fio's own example job files use: each
// value parser (rw offset modifiers, zoned distributions, CPU/node lists,
// memory policies), each option into its JobSpec field with fio's errors,
// include files and --section, and clone offsets / reporting groups.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "job/job_file.hpp"
#include "job/placement_parsers.hpp"
#include "job/value_parsers.hpp"

namespace cxlpool::io {
namespace {

namespace fs = std::filesystem;

EnvLookup no_env() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

JobFile parse_ok(const std::string& text, const ParseOptions& options = {}) {
  auto file = parse_job_file(text, "t.fio", no_env(), options);
  EXPECT_TRUE(file.has_value()) << (file ? "" : file.error().message);
  return file ? *file : JobFile{};
}

std::string parse_error(const std::string& text) {
  auto file = parse_job_file(text, "t.fio", no_env());
  EXPECT_FALSE(file.has_value()) << "parsed: " << text;
  return file ? std::string() : file.error().message;
}

JobSpec one_job(const std::string& options) {
  auto file = parse_ok("[j]\nfilename=/dev/null\n" + options);
  EXPECT_EQ(file.jobs.size(), 1u);
  return file.jobs.empty() ? JobSpec{} : file.jobs[0];
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FioRwSpec, OffsetModifiers) {
  auto back = parse_rw_spec("read:-8k", 1024);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->mode, RwMode::kRead);
  EXPECT_EQ(back->seq_skip, -8192);
  auto hole = parse_rw_spec("write:112k", 1024);
  ASSERT_TRUE(hole);
  EXPECT_EQ(hole->seq_skip, 112 * 1024);
  auto run = parse_rw_spec("randread:8", 1024);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->mode, RwMode::kRandRead);
  EXPECT_EQ(run->random_run, 8u);
  EXPECT_EQ(run->seq_skip, 0);
  EXPECT_FALSE(parse_rw_spec("randread:0", 1024));
  EXPECT_FALSE(parse_rw_spec("read:-x", 1024));
  EXPECT_TRUE(has(parse_rw_spec("trim", 1024).error().message, "no trims"));
}

TEST(FioZones, AccessAndRangePercentages) {
  auto z = parse_zones("50/5:30/15:20/");
  ASSERT_TRUE(z) << z.error().message;
  ASSERT_EQ(z->size(), 3u);
  EXPECT_DOUBLE_EQ((*z)[0].access_percent, 50);
  EXPECT_DOUBLE_EQ((*z)[1].range_percent, 15);
  EXPECT_DOUBLE_EQ((*z)[2].range_percent, 80);  // what the others leave
  EXPECT_TRUE(has(parse_zones("50/5:40/15").error().message, "not 100"));
  EXPECT_TRUE(has(parse_zones("50/60:50/60").error().message, "more than 100"));
  EXPECT_TRUE(has(parse_zones("50/:50/").error().message, "only one zone"));
  EXPECT_TRUE(has(parse_zones("50/5:50/95,100/100").error().message, "reads and writes"));
  EXPECT_TRUE(has(parse_zones("50").error().message, "access%/range%"));
  auto spec = parse_distribution("zoned:60/10:40/90");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->kind, Distribution::kZoned);
  EXPECT_EQ(spec->zones.size(), 2u);
}

TEST(FioPlacement, IndexLists) {
  auto l = parse_index_list("6,0-3,2", kMaxCpuIndex);
  ASSERT_TRUE(l);
  EXPECT_EQ(*l, (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_TRUE(has(parse_index_list("3-1", kMaxCpuIndex).error().message, "ends before it starts"));
  EXPECT_TRUE(has(parse_index_list("9000", kMaxCpuIndex).error().message, "above"));
  EXPECT_FALSE(parse_index_list("", kMaxCpuIndex));
  EXPECT_FALSE(parse_index_list("a", kMaxCpuIndex));
}

TEST(FioPlacement, MemPolicies) {
  auto bind = parse_mem_policy("bind:0-1");
  ASSERT_TRUE(bind);
  EXPECT_EQ(bind->mode, MemPolicy::kBind);
  EXPECT_EQ(bind->nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_mem_policy("interleave:0,2")->mode, MemPolicy::kInterleave);
  EXPECT_EQ(parse_mem_policy("prefer:1")->nodes, std::vector<int>{1});
  EXPECT_EQ(parse_mem_policy("local")->mode, MemPolicy::kLocal);
  EXPECT_EQ(parse_mem_policy("default")->mode, MemPolicy::kDefault);
  EXPECT_TRUE(has(parse_mem_policy("prefer:0-1").error().message, "one node"));
  EXPECT_TRUE(has(parse_mem_policy("bind").error().message, "needs nodes"));
  EXPECT_TRUE(has(parse_mem_policy("local:0").error().message, "no node list"));
  EXPECT_TRUE(has(parse_mem_policy("spread:0").error().message, "not default, prefer"));
}

TEST(FioOptions, RandomSourceOptions) {
  EXPECT_TRUE(one_job("").randrepeat);
  const JobSpec fixed = one_job("randrepeat=1\n");
  EXPECT_EQ(fixed.randseed, JobSpec{}.randseed);
  // randrepeat=0 seeds from the clock: two parses differ.
  EXPECT_NE(one_job("randrepeat=0\n").randseed, one_job("randrepeat=0\n").randseed);
  EXPECT_EQ(one_job("randrepeat=0\nrandseed=7\n").randseed, 7u);
  EXPECT_EQ(one_job("random_generator=lfsr\n").random_generator, RandomGenerator::kLfsr);
  EXPECT_EQ(one_job("random_generator=tausworthe64\n").random_generator, RandomGenerator::kTausworthe64);
  EXPECT_TRUE(has(parse_error("[j]\nrandom_generator=mt\n"), "t.fio:2: option 'random_generator': 'mt' is not one of"));
  EXPECT_EQ(one_job("rw=randread\nrandom_distribution=zoned:50/5:50/95\n").zones.size(), 2u);
  EXPECT_EQ(one_job("blockalign=4k\n").blockalign, 4096u);
  EXPECT_TRUE(has(parse_error("[j]\nba=4k,8k\n"), "different alignments"));
}

TEST(FioOptions, SizesCountsAndTimes) {
  EXPECT_EQ(one_job("filesize=1g\n").filesize, 1ull << 30);
  EXPECT_TRUE(has(parse_error("[j]\nfilesize=1m-2m\n"), "range of file sizes"));
  EXPECT_EQ(one_job("loops=3\n").loops, 3u);
  EXPECT_TRUE(has(parse_error("[j]\nloops=0\n"), "outside"));
  EXPECT_EQ(one_job("number_ios=1000\n").number_ios, 1000u);
  EXPECT_EQ(one_job("startdelay=4\n").startdelay_ns, 4'000'000'000ull);
  EXPECT_EQ(one_job("startdelay=250ms\n").startdelay_ns, 250'000'000ull);
  EXPECT_TRUE(has(parse_error("[j]\nstartdelay=1-2\n"), "random start delay"));
  EXPECT_FALSE(one_job("allow_file_create=0\n").allow_file_create);
  EXPECT_TRUE(one_job("gtod_reduce=1\n").gtod_reduce);
  EXPECT_TRUE(one_job("gtod_reduce\n").gtod_reduce);
  one_job("threads=1\n");  // fio's spelling in its examples
  one_job("thread\n");
}

TEST(FioOptions, CpuAndNumaPlacement) {
  EXPECT_EQ(one_job("cpus_allowed=0-1,3\n").cpus_allowed, (std::vector<int>{0, 1, 3}));
  one_job("cpus_allowed_policy=shared\n");
  EXPECT_TRUE(has(parse_error("[j]\ncpus_allowed_policy=split\n"), "'split' is not supported"));
  const JobSpec j = one_job("numa_cpu_nodes=0-1\nnuma_mem_policy=interleave:0-1\n");
  EXPECT_EQ(j.numa_cpu_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(j.numa_mem_policy.mode, MemPolicy::kInterleave);
  EXPECT_TRUE(has(parse_error("[j]\nnuma_mem_policy=bind\n"), "t.fio:2: option 'numa_mem_policy'"));
}

TEST(FioOptions, SubmitModeAndRates) {
  EXPECT_TRUE(one_job("ioengine=libaio\nio_submit_mode=offload\n").io_submit_offload);
  EXPECT_FALSE(one_job("io_submit_mode=inline\n").io_submit_offload);
  EXPECT_TRUE(has(parse_error("[j]\nio_submit_mode=offload\n"), "option 'io_submit_mode': offload needs an engine"));
  EXPECT_TRUE(has(parse_error("[j]\nio_submit_mode=later\n"), "not one of inline, offload"));
  const JobSpec m = one_job("ratemin=1k,2k\nrate_iops_min=5\nratecycle=250\n");
  EXPECT_EQ(m.ratemin_bytes[0], 1024u);
  EXPECT_EQ(m.ratemin_bytes[1], 2048u);
  EXPECT_EQ(m.ratemin_iops[1], 5u);
  EXPECT_EQ(m.ratecycle_ns, 250'000'000u);
  // A trim rate limits nothing cxlpool-io issues: accepted and dropped.
  const JobSpec t = one_job("rate=300,400,500\n");
  EXPECT_EQ(t.rate_bytes[0], 300u);
  EXPECT_EQ(t.rate_bytes[1], 400u);
  EXPECT_TRUE(one_job("rate_iops=50\nrate_process=poisson\n").rate_poisson);
  EXPECT_TRUE(has(parse_error("[j]\nrate_process=poisson\n"), "poisson needs rate= or rate_iops="));
}

TEST(FioOptions, EnginesAndJobControl) {
  EXPECT_EQ(one_job("ioengine=sync\n").ioengine, "sync");
  EXPECT_EQ(one_job("ioengine=null\n").ioengine, "null");
  const JobSpec x = one_job("exitall\nexit_what=stonewall\n");
  EXPECT_TRUE(x.exitall);
  EXPECT_EQ(x.exit_what, ExitWhat::kStonewall);
  EXPECT_TRUE(has(parse_error("[j]\nexit_what=some\n"), "not one of group, stonewall, all"));
  const JobSpec f = one_job("flow=8\nflow_id=2\nflow_sleep=1000\n");
  EXPECT_EQ(f.flow, 8);
  EXPECT_EQ(f.flow_id, 2);
  EXPECT_EQ(f.flow_sleep_ns, 1'000'000u);
  EXPECT_EQ(one_job("wait_for=other\n").wait_for, "other");
  const JobSpec v = one_job("verify=crc32c\nverify_backlog=4\nverify_dump=1\n");
  EXPECT_EQ(v.verify_backlog, 4u);
  EXPECT_TRUE(v.verify_dump);
  EXPECT_TRUE(has(parse_error("[j]\nverify_backlog=4\n"), "option 'verify_backlog': needs verify=crc32c"));
}

TEST(FioOptions, Priorities) {
  const JobSpec p = one_job("ioengine=libaio\nprio=7\nprioclass=2\nlog_prio=1\ncmdprio_percentage=20,30\n"
                            "cmdprio_class=1\ncmdprio=0,3\n");
  EXPECT_EQ(p.prio, 7);
  EXPECT_EQ(p.prioclass, 2);
  EXPECT_TRUE(p.log_prio);
  EXPECT_EQ(p.cmdprio_percentage[kReadDir], 20u);
  EXPECT_EQ(p.cmdprio_percentage[kWriteDir], 30u);
  EXPECT_EQ(p.cmdprio_class[kWriteDir], 1);
  EXPECT_EQ(p.cmdprio[kWriteDir], 3);
  const JobSpec b = one_job("ioengine=io_uring\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2,1m/0\n");
  ASSERT_EQ(b.cmdprio_bssplit[kReadDir].size(), 2u);
  EXPECT_EQ(b.cmdprio_bssplit[kReadDir][1].prio_class, 3);
  EXPECT_EQ(b.cmdprio_bssplit[kWriteDir][0].bytes, 1u << 20);
  EXPECT_TRUE(has(parse_error("[j]\ncmdprio_percentage=20\n"), "only for ioengine=libaio or io_uring"));
  EXPECT_TRUE(has(parse_error("[j]\nioengine=libaio\ncmdprio_percentage=20\ncmdprio_bssplit=4k/10\n"),
                  "cannot be combined with cmdprio_percentage"));
  EXPECT_TRUE(has(parse_error("[j]\nprio=8\n"), "option 'prio': 8 is outside [0, 7]"));
  EXPECT_TRUE(has(parse_error("[j]\nprioclass=4\n"), "option 'prioclass'"));
}

TEST(FioOptions, DedupeCompressionAndLatencyTarget) {
  const JobSpec d = one_job("dedupe_percentage=50\ndedupe_mode=working_set\ndedupe_global=1\n"
                            "dedupe_working_set_percentage=50\nbuffer_compress_percentage=50\nbuffer_compress_chunk=4k\n");
  EXPECT_EQ(d.dedupe_percentage, 50u);
  EXPECT_TRUE(d.dedupe_working_set);
  EXPECT_TRUE(d.dedupe_global);
  EXPECT_EQ(d.dedupe_working_set_percentage, 50u);
  EXPECT_EQ(d.buffer_compress_chunk, 4096u);
  EXPECT_TRUE(has(parse_error("[j]\ndedupe_mode=working_set\n"), "option 'dedupe_mode': needs dedupe_percentage="));
  EXPECT_TRUE(has(parse_error("[j]\ndedupe_percentage=10\nverify=crc32c\n"), "cannot be combined with verify="));
  EXPECT_TRUE(has(parse_error("[j]\ndedupe_mode=some\n"), "dedupe_mode"));
  const JobSpec l = one_job("latency_target=500000\nlatency_window=5000000\nlatency_percentile=99.9\n");
  EXPECT_EQ(l.latency_target_ns, 500'000'000u);  // bare numbers are microseconds
  EXPECT_EQ(l.latency_window_ns, 5'000'000'000u);
  EXPECT_DOUBLE_EQ(l.latency_percentile, 99.9);
  EXPECT_TRUE(has(parse_error("[j]\nlatency_target=1ms\n"), "needs latency_window="));
  EXPECT_TRUE(has(parse_error("[j]\nlatency_window=1s\n"), "option 'latency_window': needs latency_target="));
  EXPECT_TRUE(has(parse_error("[j]\nlatency_target=1ms\nlatency_window=1s\nlatency_percentile=0\n"), "(0, 100]"));
  EXPECT_TRUE(has(parse_error("[j]\nlatency_run=1\n"), "not supported by cxlpool-io"));
}

TEST(FioOptions, ZonesAndSteadyState) {
  const JobSpec z = one_job("zonemode=strided\nzonesize=256m\nzoneskip=2g\nlog_offset=1\n");
  EXPECT_TRUE(z.zone_strided);
  EXPECT_EQ(z.zonesize, 256u << 20);
  EXPECT_EQ(z.zoneskip, 2ull << 30);
  EXPECT_TRUE(z.log_offset);
  const JobSpec zbd = one_job("zonemode=zbd\nzonesize=256m\nzonecapacity=200m\nmax_open_zones=32\nread_beyond_wp=1\n");
  EXPECT_TRUE(zbd.zone_zbd);
  EXPECT_FALSE(zbd.zone_strided);
  EXPECT_EQ(zbd.zonecapacity, 200u << 20);
  EXPECT_EQ(zbd.max_open_zones, 32u);
  EXPECT_TRUE(zbd.read_beyond_wp);
  EXPECT_TRUE(has(parse_error("[j]\nzonemode=zbd\nzonesize=1m\nzoneskip=1m\n"), "must be 0 with zonemode=zbd"));
  EXPECT_TRUE(has(parse_error("[j]\nzonemode=zbd\nzonesize=1m\nzonecapacity=2m\n"), "is larger than zonesize"));
  EXPECT_TRUE(has(parse_error("[j]\nmax_open_zones=4\n"), "option 'max_open_zones': needs zonemode=zbd"));
  EXPECT_TRUE(has(parse_error("[j]\nzonemode=zbd\njob_max_open_zones=4\n"), "not supported by cxlpool-io"));
  EXPECT_TRUE(has(parse_error("[j]\nzonemode=strided\n"), "strided needs zonesize="));
  const JobSpec ss = one_job("ss=bw_slope:1%\nss_dur=10s\nss_ramp=5\n");
  EXPECT_EQ(ss.ss_metric, SteadyMetric::kBwSlope);
  EXPECT_DOUBLE_EQ(ss.ss_limit, 1.0);
  EXPECT_TRUE(ss.ss_percent);
  EXPECT_EQ(ss.ss_dur_ns, 10'000'000'000ull);
  EXPECT_EQ(ss.ss_ramp_ns, 5'000'000'000ull);
  EXPECT_FALSE(one_job("ss=iops:200\nss_dur=3\n").ss_percent);
  EXPECT_TRUE(has(parse_error("[j]\nss=iops:10%\n"), "needs ss_dur= of at least 2s"));
  EXPECT_TRUE(has(parse_error("[j]\nss=lat:10%\nss_dur=5\n"), "not one of iops, iops_slope, bw, bw_slope"));
  EXPECT_TRUE(has(parse_error("[j]\nss=iops\nss_dur=5\n"), "needs metric:limit"));
}

TEST(FioJobFile, ClonesOffsetsAndReportingGroups) {
  auto file = parse_ok("[global]\nfilename=/dev/null\noffset=120k\noffset_increment=1m\n[a]\nnumjobs=3\n"
                       "[b]\nnew_group\n[c]\nstonewall\n");
  ASSERT_EQ(file.jobs.size(), 5u);
  EXPECT_EQ(file.jobs[0].offset, 120u * 1024);
  EXPECT_EQ(file.jobs[2].offset, 120u * 1024 + 2 * (1u << 20));
  EXPECT_EQ(file.jobs[3].report_group, 1);  // new_group: reported apart, run together
  EXPECT_EQ(file.jobs[3].group, 0);
  EXPECT_EQ(file.jobs[4].report_group, 2);  // stonewall: both
  EXPECT_EQ(file.jobs[4].group, 1);
}

class FioInclude : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cxlpool_io_include_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  fs::path dir_;
};

TEST_F(FioInclude, SplicesFilesRelativeToTheIncludingFile) {
  write("globals.fio", "[global]\nbs=8k\ninclude sub/more.fio\n");
  write("sub/more.fio", "; nested, relative to sub/\nfilename=/dev/null\n");
  write("main.fio", "include globals.fio\n[j]\nrw=randread\n");
  std::ifstream in(dir_ / "main.fio");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto file = parse_job_file(text, (dir_ / "main.fio").string(), no_env());
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_EQ(file->jobs.size(), 1u);
  EXPECT_EQ(file->jobs[0].bs[0], 8192u);
  EXPECT_EQ(file->jobs[0].filenames, std::vector<std::string>{"/dev/null"});
}

TEST_F(FioInclude, ErrorsNameTheIncludedFileAndLine) {
  write("bad.fio", "[j]\nfilename=/dev/null\nbogus=1\n");
  ParseOptions o;
  o.include_dir = dir_.string();
  auto file = parse_job_file("include bad.fio\n", "main.fio", no_env(), o);
  ASSERT_FALSE(file);
  EXPECT_TRUE(has(file.error().message, (dir_ / "bad.fio").string() + ":3: option 'bogus': unknown"))
      << file.error().message;
  auto missing = parse_job_file("include nowhere.fio\n", "main.fio", no_env(), o);
  ASSERT_FALSE(missing);
  EXPECT_TRUE(has(missing.error().message, "main.fio:1: include: cannot read")) << missing.error().message;
  write("loop.fio", "include loop.fio\n");
  auto loop = parse_job_file("include loop.fio\n", "main.fio", no_env(), o);
  ASSERT_FALSE(loop);
  EXPECT_TRUE(has(loop.error().message, "nested deeper than")) << loop.error().message;
}

TEST(FioSections, OnlyTheNamedSectionsAreRead) {
  ParseOptions o;
  o.sections = {"default"};
  // The skipped section's options are not even read (fio's --section).
  auto file = parse_ok("[global]\nfilename=/dev/null\n[default]\n[override]\nrw=${UNSET}\n", o);
  ASSERT_EQ(file.jobs.size(), 1u);
  EXPECT_EQ(file.jobs[0].name, "default");
  o.sections = {"none"};
  auto none = parse_job_file("[a]\nfilename=/dev/null\n", "t.fio", no_env(), o);
  ASSERT_FALSE(none);
  EXPECT_TRUE(has(none.error().message, "no job section matches --section"));
}

}  // namespace
}  // namespace cxlpool::io
