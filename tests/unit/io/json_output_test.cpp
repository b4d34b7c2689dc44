// SPDX-License-Identifier: Apache-2.0
// Our JSON read back through the reader used for real fio output, and its
// key set compared with what fio 3.33 writes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "output/fio_report.hpp"
#include "output/output.hpp"
#include "output_test_support.hpp"

namespace cxlpool::io {
namespace {

TEST(JsonOutput, ReadsBackWithFioUnits) {
  auto run = testing::make_run();
  const auto text = render_json(run, false);
  auto report = read_fio_report(text);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->jobs.size(), 1u);
  const auto& j = report->jobs[0];
  EXPECT_EQ(j.name, "a");
  EXPECT_EQ(j.read.io_bytes, 1000u * 4096);
  EXPECT_EQ(j.read.total_ios, 1000u);
  EXPECT_EQ(j.read.runtime_ms, 500u);
  EXPECT_EQ(j.read.bw_bytes, 1000u * 4096 * 2);       // bytes per second
  EXPECT_EQ(j.read.bw_kib, 1000u * 4096 * 2 / 1024);  // KiB/s
  EXPECT_DOUBLE_EQ(j.read.iops, 2000.0);
  EXPECT_EQ(j.read.clat.n, 1000u);
  EXPECT_EQ(j.read.clat.min, 10'000u);
  EXPECT_EQ(j.read.clat.percentiles.size(), run.jobs[0].spec.percentile_list.size());
  const auto p50 = j.read.clat.at(50.0);
  EXPECT_NEAR(static_cast<double>(p50), 509'000.0, 509'000.0 * 0.004);
  EXPECT_TRUE(j.read.clat.bins.empty());  // json, not json+
  EXPECT_EQ(j.write.total_ios, 0u);
  EXPECT_DOUBLE_EQ(j.usr_cpu, 10.0);
  EXPECT_DOUBLE_EQ(j.sys_cpu, 30.0);
  EXPECT_EQ(j.job_runtime_ms, 500u);
  // CPU per I/O: 40% of 500 ms over 1000 I/Os = 200 us.
  EXPECT_NEAR(j.cpu_ns_per_io(), 200'000.0, 1e-6);

  const auto doc = nlohmann::json::parse(text);
  EXPECT_TRUE(doc["jobs"][0]["read"]["clat_ns"]["percentile"].contains("99.900000"));
  EXPECT_EQ(doc["jobs"][0]["read"]["bw_samples"], 3);
  EXPECT_EQ(doc["jobs"][0]["read"]["bw_min"], 100);
  EXPECT_DOUBLE_EQ(doc["jobs"][0]["iodepth_level"]["32"].get<double>(), 100.0);
}

TEST(JsonOutput, PlusAddsBinsThatSumToN) {
  auto run = testing::make_run();
  auto report = read_fio_report(render_json(run, true));
  ASSERT_TRUE(report) << report.error().message;
  std::uint64_t sum = 0;
  for (const auto& [ns, count] : report->jobs[0].read.clat.bins) sum += count;
  EXPECT_EQ(sum, 1000u);
}

TEST(JsonOutput, GroupReportingMergesAGroup) {
  RunResult run = testing::make_run();
  run.jobs.clear();
  for (int i = 0; i < 3; ++i) {
    auto j = testing::make_read_job("g", 0, 1000, 400 + 50 * static_cast<std::uint64_t>(i));
    j.spec.group_reporting = true;
    j.spec.clone = static_cast<std::uint32_t>(i);
    run.jobs.push_back(j);
  }
  run.jobs.push_back(testing::make_read_job("solo", 1, 10, 10));
  auto report = read_fio_report(render_json(run, false));
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->jobs.size(), 2u);
  EXPECT_EQ(report->jobs[0].read.total_ios, 3000u);
  EXPECT_EQ(report->jobs[0].read.runtime_ms, 500u);  // the longest clone
  EXPECT_EQ(report->jobs[0].read.clat.n, 3000u);
  EXPECT_EQ(report->jobs[1].name, "solo");
  EXPECT_EQ(report->jobs[1].groupid, 1);
}

TEST(JsonOutput, DeviceFactsAndDiskUtil) {
  auto run = testing::make_run();
  DeviceInfo d;
  d.path = "/var/tmp/x.dat";
  d.block_device = "vda";
  d.max_sectors_kb = 1280;
  d.reads_completed = 10;
  d.read_sectors = 80;
  d.io_ticks_ms = 250;
  run.devices.push_back(d);
  const auto doc = nlohmann::json::parse(render_json(run, false));
  EXPECT_EQ(doc["disk_util"][0]["name"], "vda");
  EXPECT_EQ(doc["disk_util"][0]["read_ios"], 10);
  EXPECT_DOUBLE_EQ(doc["disk_util"][0]["util"].get<double>(), 50.0);
  EXPECT_EQ(doc["devices"][0]["max_sectors_kb"], 1280);
  EXPECT_DOUBLE_EQ(doc["devices"][0]["avg_read_request_kb"].get<double>(), 4.0);
}

TEST(FioReport, RejectsWhatIsNotFioJson) {
  auto r = read_fio_report("not json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  r = read_fio_report(R"({"fio version": "fio-3.33", "timestamp": 1, "jobs": [{"jobname": "x"}]})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("groupid"), std::string::npos) << r.error().message;
  r = read_fio_report(R"({"fio version": "fio-3.33", "timestamp": 1, "jobs": 3})");
  ASSERT_FALSE(r);
}

TEST(FioReport, NamesABadPercentileOrBin) {
  auto doc = nlohmann::json::parse(render_json(testing::make_run(), false));
  doc["jobs"][0]["read"]["clat_ns"]["percentile"]["p99"] = 1;
  auto r = read_fio_report(doc.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("jobs[0].read.clat_ns.percentile: bad entry \"p99\""), std::string::npos)
      << r.error().message;
  doc = nlohmann::json::parse(render_json(testing::make_run(), false));
  doc["jobs"][0]["write"]["lat_ns"]["bins"]["1000"] = "many";
  r = read_fio_report(doc.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("jobs[0].write.lat_ns.bins: bad entry \"1000\""), std::string::npos)
      << r.error().message;
}

TEST(FioReport, SkipsNotesBeforeTheDocument) {
  auto run = testing::make_run();
  auto r = read_fio_report("fio: note: something\n" + render_json(run, false));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs.size(), 1u);
}

}  // namespace
}  // namespace cxlpool::io
