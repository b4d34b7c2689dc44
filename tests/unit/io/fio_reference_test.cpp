// SPDX-License-Identifier: Apache-2.0
// Real fio 3.x output through the same reader as ours, and our JSON's keys
// checked against fio's: every key fio writes for a job is in ours, except
// the few listed below that describe fio features cxlpool-io does not have.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "output/fio_report.hpp"
#include "output/output.hpp"
#include "output_test_support.hpp"

namespace cxlpool::io {
namespace {

namespace fs = std::filesystem;

std::string run_command(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    status = -1;
    return out;
  }
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  status = ::pclose(p);
  return out;
}

bool have_fio() {
  int status = 0;
  run_command("command -v fio >/dev/null 2>&1", status);
  return status == 0;
}

// Key paths of a JSON object; the values of maps keyed by data (percentiles,
// bins, options) are not part of the shape.
void key_paths(const nlohmann::json& j, const std::string& prefix, std::set<std::string>& out) {
  if (!j.is_object()) return;
  for (const auto& [k, v] : j.items()) {
    const auto path = prefix + "/" + k;
    out.insert(path);
    if (k == "percentile" || k == "bins" || k == "job options") continue;
    key_paths(v, path, out);
  }
}

class FioReference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_fio()) GTEST_SKIP() << "fio is not installed";
    dir_ = fs::path("/var/tmp") / ("cxlpool-io-fioref-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string fio_json(const std::string& args) {
    int status = 0;
    auto out = run_command("fio --output-format=json+ --name=ref --filename=" + (dir_ / "ref.dat").string() +
                               " --size=2m --bs=4k " + args + " 2>/dev/null",
                           status);
    EXPECT_EQ(status, 0) << out;
    return out;
  }
  fs::path dir_;
};

TEST_F(FioReference, ReaderTakesRealFioOutput) {
  const auto text = fio_json("--rw=randrw --ioengine=psync --percentile_list=50:99:99.9");
  auto report = read_fio_report(text);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->version.rfind("fio-3", 0), 0u) << report->version;
  ASSERT_EQ(report->jobs.size(), 1u);
  const auto& j = report->jobs[0];
  EXPECT_EQ(j.name, "ref");
  EXPECT_EQ(j.read.io_bytes + j.write.io_bytes, 2u << 20);
  EXPECT_EQ(j.read.total_ios + j.write.total_ios, 512u);
  EXPECT_EQ(j.read.io_bytes, j.read.total_ios * 4096);
  for (const auto* d : {&j.read, &j.write}) {
    if (d->total_ios == 0) continue;
    EXPECT_EQ(d->clat.n, d->total_ios);
    EXPECT_EQ(d->clat.percentiles.size(), 3u);
    EXPECT_GT(d->clat.at(99.9), 0u);
    EXPECT_GE(d->clat.at(99.0), d->clat.at(50.0));
    std::uint64_t sum = 0;
    for (const auto& [ns, c] : d->clat.bins) sum += c;
    EXPECT_EQ(sum, d->clat.n);
  }
}

TEST_F(FioReference, OurJobObjectHasEveryKeyFioWrites) {
  const auto fio_doc = nlohmann::json::parse(fio_json("--rw=randread --ioengine=libaio --iodepth=4 --direct=1"));
  auto run = testing::make_run();
  const auto ours = nlohmann::json::parse(render_json(run, true));

  std::set<std::string> fio_keys, our_keys;
  key_paths(fio_doc["jobs"][0], "", fio_keys);
  key_paths(ours["jobs"][0], "", our_keys);
  for (const auto& k : fio_keys) EXPECT_TRUE(our_keys.count(k)) << "fio writes " << k << ", we do not";
  for (const char* top : {"fio version", "timestamp", "timestamp_ms", "time", "jobs", "disk_util"})
    EXPECT_TRUE(ours.contains(top)) << top;
  // The same types as fio's where it matters to parsers.
  EXPECT_TRUE(ours["jobs"][0]["read"]["iops"].is_number_float());
  EXPECT_TRUE(ours["jobs"][0]["read"]["bw"].is_number_integer());
  EXPECT_TRUE(ours["jobs"][0]["read"]["runtime"].is_number_integer());
}

}  // namespace
}  // namespace cxlpool::io
