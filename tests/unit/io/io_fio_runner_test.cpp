// SPDX-License-Identifier: Apache-2.0
// What the fio options of fio's example job files do once a job runs:
// offset modifiers and random runs, zoned distributions, lfsr, the null and
// sync engines, filesize/loops/number_ios, gtod_reduce, ratemin, wait_for,
// exitall, flow weights, startdelay, and CPU/NUMA placement (with a fake
// sysfs node tree; binding to a real node where the machine has one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "run/offset_generator.hpp"
#include "run/placement.hpp"
#include "run/steady_state.hpp"
#include "run/runner.hpp"
#include "run_dir_fixture.hpp"

namespace cxlpool::io {
namespace {

namespace fs = std::filesystem;

class FioRun : public RunDirTest {
 protected:
  std::string prefix() const override { return "fio_run_"; }

  Result<RunResult> run(std::vector<JobSpec> jobs) {
    JobFile f;
    f.jobs = std::move(jobs);
    for (const JobSpec& j : f.jobs) f.groups = std::max(f.groups, j.group + 1);
    return run_jobs(f, RunOptions{});
  }

  RunResult run_ok(std::vector<JobSpec> jobs) {
    auto r = run(std::move(jobs));
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : RunResult{};
  }

};

TEST(FioOffsets, BackwardsReadWrapsToTheEnd) {
  JobSpec j;
  j.rw = RwMode::kRead;
  j.seq_skip = -8192;
  OffsetGenerator gen(j, 0, 8 * 4096, 4096, 1);
  std::vector<std::uint64_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(gen.next(kReadDir, 4096).offset / 4096);
  // fio: 0, then past the start wraps to the end less the skip, then back by one block each time.
  EXPECT_EQ(got, (std::vector<std::uint64_t>{0, 6, 5, 4, 3}));
}

TEST(FioOffsets, ForwardSkipLeavesHoles) {
  JobSpec j;
  j.rw = RwMode::kWrite;
  j.seq_skip = 3 * 4096;
  OffsetGenerator gen(j, 4096, 10 * 4096, 4096, 1);
  std::vector<std::uint64_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(gen.next(kWriteDir, 4096).offset);
  EXPECT_EQ(got, (std::vector<std::uint64_t>{4096, 4096 + 4 * 4096, 4096 + 8 * 4096, 4096}));
}

TEST(FioOffsets, RandomRunsAreSequentialAfterEachDraw) {
  JobSpec j;
  j.rw = RwMode::kRandRead;
  j.random_run = 4;
  j.norandommap = true;
  OffsetGenerator gen(j, 0, 1024 * 4096, 4096, 9);
  int sequential = 0;
  std::uint64_t last = gen.next(kReadDir, 4096).offset;
  for (int i = 1; i < 400; ++i) {
    const std::uint64_t o = gen.next(kReadDir, 4096).offset;
    if (o == last + 4096) ++sequential;
    last = o;
  }
  // Three of every four follow on (a few more by chance, fewer at the end of the range).
  EXPECT_GE(sequential, 280);
  EXPECT_LE(sequential, 310);
}

TEST(FioOffsets, ZonedDistributionHonoursTheShares) {
  JobSpec j;
  j.rw = RwMode::kRandRead;
  j.random_distribution = Distribution::kZoned;
  j.zones = {{50, 5}, {30, 15}, {20, 80}};
  OffsetGenerator gen(j, 0, 1000 * 4096, 4096, 3);
  int in_first = 0, in_second = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t block = gen.next(kReadDir, 4096).offset / 4096;
    if (block < 50) ++in_first;
    else if (block < 200) ++in_second;
  }
  EXPECT_NEAR(in_first / double(kDraws), 0.50, 0.02);
  EXPECT_NEAR(in_second / double(kDraws), 0.30, 0.02);
}

TEST(FioOffsets, LfsrVisitsEveryBlockOncePerPassEvenWithoutARandomMap) {
  JobSpec j;
  j.rw = RwMode::kRandRead;
  j.norandommap = true;
  j.random_generator = RandomGenerator::kLfsr;
  OffsetGenerator gen(j, 0, 256 * 4096, 4096, 5);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 256; ++i) seen.insert(gen.next(kReadDir, 4096).offset);
  EXPECT_EQ(seen.size(), 256u);
}

TEST(FioOffsets, BlockalignRoundsRandomOffsets) {
  JobSpec j;
  j.rw = RwMode::kRandRead;
  j.norandommap = true;
  j.blockalign = 4096;
  OffsetGenerator gen(j, 0, 1024 * 512, 512, 5);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(gen.next(kReadDir, 512).offset % 4096, 0u);
}

TEST(FioOffsets, StridedZonesReadZonesizeThenSkip) {
  JobSpec j;
  j.rw = RwMode::kRead;
  j.zone_strided = true;
  j.zonesize = 2 * 4096;
  j.zoneskip = 3 * 4096;
  OffsetGenerator gen(j, 0, 20 * 4096, 4096, 1);
  std::vector<std::uint64_t> got;
  for (int i = 0; i < 8; ++i) got.push_back(gen.next(kReadDir, 4096).offset / 4096);
  // Zones of 2 blocks every 5 blocks, wrapping at the end of the region.
  EXPECT_EQ(got, (std::vector<std::uint64_t>{0, 1, 5, 6, 10, 11, 15, 16}));
  EXPECT_EQ(gen.next(kReadDir, 4096).offset, 0u);
  j.rw = RwMode::kRandRead;
  OffsetGenerator random(j, 0, 20 * 4096, 4096, 1);
  for (int zone = 0; zone < 4; ++zone) {
    for (int i = 0; i < 2; ++i) {
      const std::uint64_t block = random.next(kReadDir, 4096).offset / 4096;
      EXPECT_GE(block, zone * 5u);
      EXPECT_LT(block, zone * 5u + 2);
    }
  }
}

TEST(FioSteadyState, MeanDeviationAndSlope) {
  const std::deque<double> flat = {100, 104, 98, 101};
  EXPECT_TRUE(SteadyState::attained(flat, SteadyMetric::kIops, 5, true));
  EXPECT_FALSE(SteadyState::attained(flat, SteadyMetric::kIops, 1, true));
  EXPECT_TRUE(SteadyState::attained(flat, SteadyMetric::kIops, 5, false));
  const std::deque<double> rising = {100, 110, 120, 130};
  EXPECT_FALSE(SteadyState::attained(rising, SteadyMetric::kBwSlope, 1, true));  // slope 10/interval, 8.7% of the mean
  EXPECT_TRUE(SteadyState::attained(rising, SteadyMetric::kBwSlope, 10, true));
  EXPECT_TRUE(SteadyState::attained(flat, SteadyMetric::kIopsSlope, 1, true));
}

TEST_F(FioRun, SteadyStateEndsAJobEarly) {
  JobSpec j = job("steady", RwMode::kRandRead, 64 << 20);
  j.ioengine = "null";
  j.time_based = true;
  j.runtime_ns = 30'000'000'000ull;
  j.ss_metric = SteadyMetric::kIops;
  j.ss_limit = 50;
  j.ss_percent = true;
  j.ss_dur_ns = 2'000'000'000ull;
  RunResult r = run_ok({j});
  EXPECT_LT(r.jobs[0].runtime_ns, 10'000'000'000ull);
  EXPECT_EQ(r.jobs[0].error, 0);
}

TEST_F(FioRun, NullEngineCompletesWithoutAFile) {
  JobSpec j = job("null", RwMode::kRandRead, 64 << 20);
  j.ioengine = "null";
  j.iodepth = 8;
  j.gtod_reduce = true;
  RunResult r = run_ok({j});
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].error, 0) << r.jobs[0].error_message;
  EXPECT_EQ(r.jobs[0].dir[kReadDir].io_bytes, 64u << 20);
  EXPECT_EQ(r.jobs[0].dir[kReadDir].clat.count(), 0u);  // gtod_reduce: no latencies
  EXPECT_FALSE(fs::exists(j.filenames[0]));
  JobSpec unsized = j;
  unsized.size = 0;
  auto bad = run({unsized});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("does not exist and no size="), std::string::npos) << bad.error().message;
}

TEST_F(FioRun, SyncEngineFilesizeLoopsAndNumberIos) {
  JobSpec j = job("sync", RwMode::kWrite, 0);
  j.ioengine = "sync";
  j.filesize = 256 << 10;
  j.loops = 3;
  RunResult r = run_ok({j});
  EXPECT_EQ(r.jobs[0].dir[kWriteDir].io_bytes, 3u * (256 << 10));
  EXPECT_EQ(fs::file_size(j.filenames[0]), 256u << 10);
  j.number_ios = 10;
  r = run_ok({j});
  EXPECT_EQ(r.jobs[0].dir[kWriteDir].ios, 10u);
  // filesize sizes the file, size= is then the job's total.
  j.number_ios = 0;
  j.loops = 1;
  j.size = 64 << 10;
  r = run_ok({j});
  EXPECT_EQ(r.jobs[0].dir[kWriteDir].io_bytes, 64u << 10);
}

TEST_F(FioRun, VerifyBacklogChecksAsItWrites) {
  // fio's cross-stripe-verify pattern: 16k written every 128k, each block
  // read back and checked after it is written.
  JobSpec j = job("backlog", RwMode::kWrite, 2 << 20);
  j.bs[0] = j.bs[1] = 16 << 10;
  j.seq_skip = 112 << 10;
  j.verify = VerifyMode::kCrc32c;
  j.verify_backlog = 1;
  j.loops = 2;
  RunResult r = run_ok({j});
  EXPECT_EQ(r.jobs[0].error, 0) << r.jobs[0].error_message;
  EXPECT_EQ(r.jobs[0].dir[kWriteDir].io_bytes, 2u * (2 << 20));
  EXPECT_EQ(r.jobs[0].dir[kReadDir].io_bytes, 2u * (2 << 20));  // every written block read back once
  EXPECT_EQ(r.jobs[0].verify_errors, 0u);
}

TEST_F(FioRun, AllowFileCreateZeroRefusesAMissingFile) {
  JobSpec j = job("nocreate", RwMode::kRead);
  j.allow_file_create = false;
  auto r = run({j});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("allow_file_create=0"), std::string::npos) << r.error().message;
}

TEST_F(FioRun, RateminFailsAJobThatIsTooSlow) {
  JobSpec j = job("slow", RwMode::kRead, 4 << 20);
  j.rate_iops[kReadDir] = 20;
  j.ratemin_iops[kReadDir] = 1000;
  j.ratecycle_ns = 200'000'000;
  RunResult r = run_ok({j});
  EXPECT_EQ(r.jobs[0].error, EIO);
  EXPECT_NE(r.jobs[0].error_message.find("rate_iops_min: read rate"), std::string::npos) << r.jobs[0].error_message;
}

TEST_F(FioRun, WaitForStartsAfterTheNamedJobEnds) {
  JobSpec first = job("first", RwMode::kWrite, 1 << 20);
  first.rate_bytes[kWriteDir] = 4 << 20;  // about 250 ms
  JobSpec second = job("second", RwMode::kRead, 64 << 10);
  second.wait_for = "first";
  RunResult r = run_ok({first, second});
  ASSERT_EQ(r.jobs.size(), 2u);
  const auto& a = r.jobs[0];
  const auto& b = r.jobs[1];
  EXPECT_GE(b.start_unix_ms + 5, a.start_unix_ms + a.runtime_ns / 1'000'000);
  JobSpec orphan = job("orphan", RwMode::kRead);
  orphan.wait_for = "nobody";
  auto bad = run({orphan});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("wait_for=nobody names no job defined before it"), std::string::npos);
}

TEST_F(FioRun, ExitallStopsTheOthers) {
  JobSpec quick = job("quick", RwMode::kRead, 64 << 10);
  quick.exitall = true;
  JobSpec slow = job("slow", RwMode::kRead, 1 << 20);
  slow.time_based = true;
  slow.runtime_ns = 30'000'000'000ull;
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_ok({quick, slow});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  JobSpec later = job("later", RwMode::kRead, 64 << 10);
  later.group = 1;
  quick.exit_what = ExitWhat::kAll;
  r = run_ok({quick, slow, later});
  EXPECT_EQ(r.jobs.size(), 2u);  // exit_what=all: the next stonewall group never starts
}

TEST_F(FioRun, FlowKeepsTheWeightsRatio) {
  JobSpec heavy = job("heavy", RwMode::kRead, 4 << 20);
  heavy.ioengine = "null";
  heavy.flow = 8;
  heavy.time_based = true;
  heavy.runtime_ns = 200'000'000;
  JobSpec light = heavy;
  light.name = "light";
  light.flow = 1;
  RunResult r = run_ok({heavy, light});
  const double ratio = double(r.jobs[0].dir[kReadDir].ios) / double(std::max<std::uint64_t>(1, r.jobs[1].dir[kReadDir].ios));
  EXPECT_NEAR(ratio, 8.0, 1.0);
}

TEST_F(FioRun, StartdelayPostponesTheJob) {
  JobSpec a = job("now", RwMode::kRead, 64 << 10);
  JobSpec b = job("later", RwMode::kRead, 64 << 10);
  b.startdelay_ns = 300'000'000;
  RunResult r = run_ok({a, b});
  EXPECT_GE(r.jobs[1].start_unix_ms, r.jobs[0].start_unix_ms + 250);
}

TEST_F(FioRun, JobCpusFromAFakeNodeTree) {
  const fs::path nodes = dir_ / "node";
  fs::create_directories(nodes / "node0");
  fs::create_directories(nodes / "node1");
  fs::create_directories(nodes / "node2");
  std::ofstream(nodes / "node0" / "cpulist") << "0-3\n";
  std::ofstream(nodes / "node1" / "cpulist") << "4-7\n";
  std::ofstream(nodes / "node2" / "cpulist") << "\n";  // CXL memory: a node without CPUs
  JobSpec j;
  j.numa_cpu_nodes = {0, 1};
  EXPECT_EQ(*job_cpus(j, nodes.string()), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  j.cpus_allowed = {2, 5, 9};
  EXPECT_EQ(*job_cpus(j, nodes.string()), (std::vector<int>{2, 5}));
  j.cpus_allowed = {9};
  EXPECT_NE(job_cpus(j, nodes.string()).error().message.find("no CPU in common"), std::string::npos);
  j.cpus_allowed.clear();
  j.numa_cpu_nodes = {2};
  EXPECT_NE(job_cpus(j, nodes.string()).error().message.find("have no CPUs"), std::string::npos);
  j.numa_cpu_nodes = {5};
  EXPECT_EQ(job_cpus(j, nodes.string()).error().code, ENOENT);
}

TEST_F(FioRun, CpusAllowedAndMemPolicyOnThisMachine) {
  if (!fs::exists(fs::path(kSysNodeRoot) / "node0" / "cpulist")) GTEST_SKIP() << "no NUMA node 0 in sysfs";
  JobSpec j = job("placed", RwMode::kRead, 256 << 10);
  j.cpus_allowed = {0};
  j.numa_cpu_nodes = {0};
  j.numa_mem_policy.mode = MemPolicy::kBind;
  j.numa_mem_policy.nodes = {0};
  RunResult r = run_ok({j});
  EXPECT_EQ(r.jobs[0].error, 0) << r.jobs[0].error_message;
  EXPECT_EQ(r.jobs[0].dir[kReadDir].io_bytes, 256u << 10);
  // A node this machine lacks is refused before any I/O, naming it.
  j.numa_mem_policy.nodes = {4095};
  auto bad = run({j});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("does not exist"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace cxlpool::io
