// SPDX-License-Identifier: Apache-2.0
// The cxlpool-io binary on tiny jobs: exit codes (0 ok, 1 job error, 2 usage
// or job-file error, 77 an engine this machine cannot run), JSON a fio
// reader takes, json+ bins, logs and plots on disk.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io_tool_binary.hpp"
#include "support/child_process.hpp"
#include "support/environment.hpp"

namespace cxlpool::integration {
namespace {

namespace fs = std::filesystem;


class IoTool : public ::testing::Test {
 protected:
  void SetUp() override {
    // The root file system (O_DIRECT works there; tmpfs may refuse it).
    dir_ = fs::path("/var/tmp") / ("cxlpool-io-it-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProgramResult io(std::vector<std::string> args) {
    args.insert(args.begin(), io_binary());
    ProgramOptions o;
    o.timeout = std::chrono::seconds(60);
    return run_program(args, o);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(IoTool, CommandLineJobPrintsFioJson) {
  const ProgramResult r = io({"--output-format=json", "--name=small", "--filename=" + file("a.dat"), "--size=1m",
                              "--rw=randread", "--bs=4k", "--ioengine=psync", "--direct=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("fio version"));
  ASSERT_EQ(j["jobs"].size(), 1u);
  const auto& job = j["jobs"][0];
  EXPECT_EQ(job["jobname"], "small");
  EXPECT_EQ(job["error"], 0);
  EXPECT_EQ(job["read"]["io_bytes"], 1 << 20);
  EXPECT_EQ(job["read"]["total_ios"], 256);
  EXPECT_GT(job["read"]["iops"].get<double>(), 0);
  EXPECT_TRUE(job["read"]["clat_ns"]["percentile"].contains("99.000000"));
  EXPECT_EQ(job["write"]["io_bytes"], 0);
}

TEST_F(IoTool, JobFileWithGroupsAndJsonPlusBins) {
  const std::string jobfile = file("two.fio");
  std::ofstream(jobfile) << "[global]\nfilename=" << file("b.dat") << "\nsize=512k\nbs=4k\n"
                         << "[writer]\nrw=write\nioengine=libaio\niodepth=4\ndirect=1\n"
                         << "[reader]\nstonewall\nrw=randread\nioengine=io_uring\niodepth=8\ndirect=1\n";
  const ProgramResult r = io({"--output-format=json+", jobfile});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 2u);
  EXPECT_EQ(j["jobs"][0]["write"]["io_bytes"], 512 << 10);
  EXPECT_EQ(j["jobs"][1]["read"]["io_bytes"], 512 << 10);
  EXPECT_TRUE(j["jobs"][1]["read"]["clat_ns"].contains("bins"));
}

TEST_F(IoTool, UnknownOptionIsAUsageErrorNamingItsLine) {
  const std::string jobfile = file("bad.fio");
  std::ofstream(jobfile) << "[job]\nrw=read\nsize=1m\nno_such_option=1\n";
  const ProgramResult r = io({jobfile});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("no_such_option"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(":4"), std::string::npos) << r.err;
  EXPECT_EQ(io({"--output-format=xml", "--name=x", "--size=1m"}).exit_code, 2);
  EXPECT_EQ(io({}).exit_code, 2);
}

TEST_F(IoTool, SetUpFailureIsAJobError) {
  const ProgramResult r =
      io({"--name=nowhere", "--filename=" + file("missing-dir/x.dat"), "--size=1m", "--rw=read"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
}

TEST_F(IoTool, VerifyMismatchIsAJobError) {
  const std::string f = file("v.dat");
  ASSERT_EQ(io({"--name=w", "--filename=" + f, "--size=64k", "--rw=write", "--verify=crc32c"}).exit_code, 0);
  {
    std::fstream s(f, std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(3 * 4096 + 64);
    s.put('\x11');
  }
  const ProgramResult r = io({"--output-format=json", "--name=r", "--filename=" + f, "--size=64k", "--rw=read",
                              "--verify=crc32c"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("verif"), std::string::npos) << r.err;
}

TEST_F(IoTool, CudaWithoutAGpuIsSkippedWithAReason) {
  const ProgramResult r = io({"--name=g", "--filename=" + file("g.dat"), "--size=1m", "--rw=read",
                              "--ioengine=cuda"});
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is present: the cuda engine ran";
  EXPECT_EQ(r.exit_code, 77) << r.err;
  EXPECT_NE(r.err.find("cuda"), std::string::npos) << r.err;
}

TEST_F(IoTool, LogsAndPlotsAreWritten) {
  const std::string prefix = file("run");
  const ProgramResult r = io({"--plot=" + file("plots"), "--name=l", "--filename=" + file("l.dat"), "--size=256k",
                              "--rw=randread", "--write_lat_log=" + prefix, "--write_bw_log=" + prefix});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("l:"), std::string::npos) << r.out;  // the human summary names the job
  EXPECT_TRUE(fs::exists(prefix + "_lat.1.log"));
  EXPECT_TRUE(fs::exists(prefix + "_bw.1.log"));
  EXPECT_TRUE(fs::exists(file("plots") + "/index.html"));
}

}  // namespace
}  // namespace cxlpool::integration
