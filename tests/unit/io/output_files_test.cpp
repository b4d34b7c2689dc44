// SPDX-License-Identifier: Apache-2.0
// The human summary, fio-format logs, plots and device probing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "output/fio_units.hpp"
#include "output/output.hpp"
#include "output_test_support.hpp"
#include "support/temp_dir.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::io {
namespace {

namespace fs = std::filesystem;

using test::read_file;

// Each test writes into a fresh directory of its own.
class OutputFiles : public ::testing::Test {
 protected:
  test::TempDir tmp_{"io-out"};
  const fs::path dir_ = tmp_.path();
};

TEST(FioUnits, ScalesLikeFio) {
  EXPECT_EQ(scaled_number(28400, 4, UnitBase::kDecimal), "28.4k");
  EXPECT_EQ(scaled_number(4194304, 4, UnitBase::kBinary), "4096Ki");
  EXPECT_EQ(scaled_number(116508000, 4, UnitBase::kBinary), "111Mi");
  EXPECT_EQ(scaled_number(117000000, 4, UnitBase::kDecimal), "117M");
  EXPECT_EQ(scaled_number(999, 4, UnitBase::kDecimal), "999");
  EXPECT_EQ(scaled_number(70000, 4, UnitBase::kDecimal), "70k");
  EXPECT_EQ(scaled_number(1536, 3, UnitBase::kBinary), "1.5Ki");
}

TEST(HumanOutput, HasFiosLines) {
  auto run = testing::make_run();
  DeviceInfo d;
  d.block_device = "vda";
  d.max_sectors_kb = 1280;
  d.reads_completed = 4;
  d.read_sectors = 64;
  run.devices.push_back(d);
  const auto text = render_human(run);
  for (const char* line : {"a: (groupid=0, jobs=1): err= 0",
                           "read: IOPS=2000, BW=8000KiB/s (8192kB/s)(4000KiB/500msec)",
                           "clat percentiles (usec):",
                           "99.90th=[",
                           "cpu          : usr=10.00%, sys=30.00%, ctx=123",
                           "IO depths    : 1=0.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=100.0%",
                           "Run status group 0 (all jobs):",
                           "READ: bw=8000KiB/s (8192kB/s)",
                           "max_sectors_kb=1280",
                           "mean read request: 8.0 KiB"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }
}

TEST_F(OutputFiles, LogsInFiosFormat) {
  auto run = testing::make_run();
  auto& j = run.jobs[0];
  j.spec.write_lat_log = "lat";
  j.spec.write_bw_log = (dir_ / "sub" / "bw").string();  // absolute prefix
  j.spec.write_hist_log = "hist";
  j.lat_log = {{5, 12345, kReadDir, 4096, 8192}, {6, 23456, kWriteDir, 4096, 0}};
  j.clat_log = {{5, 12000, kReadDir, 4096, 8192}};
  j.bw_log = {{1000, 8000, kReadDir, 0, 0}};
  HistogramSample hs;
  hs.time_ms = 100;
  hs.block_size = 4096;
  hs.histogram.record(10);        // fio bin 10
  hs.histogram.record(1000);      // msb 9: error bits 3 -> bin 4*64 + (1000>>3 & 63) = 256+61
  hs.histogram.record(1000);
  j.hist_log.push_back(hs);
  ASSERT_TRUE(write_logs(run, dir_));

  EXPECT_EQ(read_file(dir_ / "lat_lat.1.log"), "5, 12345, 0, 4096, 0\n6, 23456, 1, 4096, 0\n");
  EXPECT_EQ(read_file(dir_ / "lat_clat.1.log"), "5, 12000, 0, 4096, 0\n");
  EXPECT_TRUE(fs::exists(dir_ / "lat_slat.1.log"));
  EXPECT_EQ(read_file(dir_ / "sub" / "bw_bw.1.log"), "1000, 8000, 0, 0, 0\n");
  EXPECT_FALSE(fs::exists(dir_ / "lat_iops.1.log"));

  // Averaged windows log block size 0, as fio does.
  j.spec.log_avg_msec = 500;
  ASSERT_TRUE(write_logs(run, dir_));
  EXPECT_EQ(read_file(dir_ / "lat_lat.1.log"), "5, 12345, 0, 0, 0\n6, 23456, 1, 0, 0\n");

  const auto hist = read_file(dir_ / "hist_clat_hist.1.log");
  std::vector<std::uint64_t> cols;
  std::stringstream ss(hist);
  std::string cell;
  while (std::getline(ss, cell, ',')) cols.push_back(std::stoull(cell));
  ASSERT_EQ(cols.size(), 3u + 1856u);  // time, direction, bs, fio's 1856 bins
  EXPECT_EQ(cols[0], 100u);
  EXPECT_EQ(cols[2], 4096u);
  EXPECT_EQ(cols[3 + 10], 1u);
  EXPECT_EQ(cols[3 + 256 + 61], 2u);
  std::uint64_t sum = 0;
  for (std::size_t i = 3; i < cols.size(); ++i) sum += cols[i];
  EXPECT_EQ(sum, 3u);
}

TEST_F(OutputFiles, PlotsAreSvgWithAnIndex) {
  auto run = testing::make_run();
  run.jobs[0].bw_log = {{1000, 8000, kReadDir, 0, 0}, {2000, 9000, kReadDir, 0, 0}};
  ASSERT_TRUE(write_plots(run, dir_ / "plots"));
  const auto index = read_file(dir_ / "plots" / "index.html");
  EXPECT_NE(index.find("job1_bw.svg"), std::string::npos);
  EXPECT_NE(index.find("job1_clat_cdf.svg"), std::string::npos);
  const auto bw = read_file(dir_ / "plots" / "job1_bw.svg");
  EXPECT_EQ(bw.rfind("<svg", 0), 0u);
  EXPECT_NE(bw.find("<polyline"), std::string::npos);
  const auto cdf = read_file(dir_ / "plots" / "job1_clat_cdf.svg");
  EXPECT_NE(cdf.find("<polyline"), std::string::npos);
  EXPECT_NE(cdf.find("</svg>"), std::string::npos);
}

// A sysfs tree shaped like the real one: /sys/dev/block/M:m links to the
// partition's directory under its disk, the queue is the disk's.
TEST_F(OutputFiles, ProbesAPartitionThroughAFixtureSysfs) {
  const auto file = dir_ / "data";
  std::ofstream(file) << "x";
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  const auto root = dir_ / "sys";
  const auto disk = root / "devices" / "virtual" / "block" / "fake0";
  const auto part = disk / "fake0p1";
  fs::create_directories(part);
  fs::create_directories(disk / "queue");
  std::ofstream(part / "partition") << "1\n";
  std::ofstream(part / "stat") << "  100 0 1600 40 50 0 800 20 0 70 60 0 0 0 0\n";
  std::ofstream(disk / "queue" / "max_sectors_kb") << "1280\n";
  std::ofstream(disk / "queue" / "max_hw_sectors_kb") << "2147483647\n";
  std::ofstream(disk / "queue" / "read_ahead_kb") << "128\n";
  std::ofstream(disk / "queue" / "logical_block_size") << "512\n";
  std::ofstream(disk / "queue" / "physical_block_size") << "4096\n";
  std::ofstream(disk / "queue" / "nr_requests") << "256\n";
  std::ofstream(disk / "queue" / "scheduler") << "mq-deadline kyber [none]\n";
  std::ofstream(disk / "queue" / "rotational") << "0\n";
  fs::create_directories(root / "dev" / "block");
  fs::create_directory_symlink("../../devices/virtual/block/fake0/fake0p1",
                               root / "dev" / "block" / (std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev))));

  auto before = probe_device(file.string(), root.string());
  EXPECT_EQ(before.block_device, "fake0p1");
  EXPECT_EQ(before.max_sectors_kb, 1280u);
  EXPECT_EQ(before.max_hw_sectors_kb, 2147483647u);
  EXPECT_EQ(before.read_ahead_kb, 128u);
  EXPECT_EQ(before.logical_block_size, 512u);
  EXPECT_EQ(before.physical_block_size, 4096u);
  EXPECT_EQ(before.nr_requests, 256u);
  EXPECT_EQ(before.scheduler, "none");
  EXPECT_FALSE(before.rotational);
  EXPECT_EQ(before.reads_completed, 100u);
  EXPECT_EQ(before.read_sectors, 1600u);
  EXPECT_EQ(before.writes_completed, 50u);
  EXPECT_EQ(before.io_ticks_ms, 70u);

  std::ofstream(part / "stat") << "  110 0 1760 45 50 0 800 20 0 75 60 0 0 0 0\n";
  auto after = probe_device(file.string(), root.string());
  add_diskstats_delta(after, before);
  EXPECT_EQ(after.reads_completed, 10u);
  EXPECT_EQ(after.read_sectors, 160u);  // 8 KiB per request
  EXPECT_EQ(after.writes_completed, 0u);
  EXPECT_EQ(after.io_ticks_ms, 5u);
}

TEST(DeviceProbe, UnknownFileLeavesFieldsZero) {
  auto info = probe_device("/nonexistent/cxlpool-io", "/sys");
  EXPECT_TRUE(info.block_device.empty());
  EXPECT_EQ(info.max_sectors_kb, 0u);
}

TEST(DeviceProbe, TheRootFileSystemsDevice) {
  auto info = probe_device("/var/tmp", "/sys");
  if (info.block_device.empty()) GTEST_SKIP() << "/var/tmp is not on a block device here";
  EXPECT_GT(info.logical_block_size, 0u);
  EXPECT_GT(info.max_sectors_kb, 0u);
}

}  // namespace
}  // namespace cxlpool::io
