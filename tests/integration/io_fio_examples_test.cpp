// SPDX-License-Identifier: Apache-2.0
// cxlpool-io on the job files of fio's own examples/ directory (fio 3.33,
// found at run time: CXLPOOL_FIO_EXAMPLES, an installed examples directory,
// or where scripts/fetch-fio-examples.sh puts them; skipped with that
// reason when absent, since the project ships no fio files). Every file
// whose engines are all psync/sync/libaio/io_uring/mmap/null is parsed with
// --parse-only and must run or be refused as the table below says; a sample
// runs for real with small files (size/filesize 2 MiB), a one-second
// runtime cap and no start delays.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "io_tool_binary.hpp"
#include "support/child_process.hpp"
#include "support/environment.hpp"

namespace cxlpool::integration {
namespace {

namespace fs = std::filesystem;


// "3.33" from `fio --version`; empty without fio.
std::string fio_version() {
  const ProgramResult r = run_program({"/usr/bin/fio", "--version"}, ProgramOptions{});
  if (r.exit_code != 0) return {};
  std::string v = r.out.substr(0, r.out.find('\n'));
  return v.rfind("fio-", 0) == 0 ? v.substr(4) : v;
}

fs::path examples_dir() {
  std::vector<fs::path> candidates;
  if (const std::string set = test::env_value("CXLPOOL_FIO_EXAMPLES"); !set.empty()) candidates.emplace_back(set);
  candidates.emplace_back("/usr/share/doc/fio/examples");
  candidates.emplace_back("/usr/share/fio/examples");
  const std::string version = fio_version();
  if (!version.empty()) {
    const std::string xdg = test::env_value("XDG_CACHE_HOME");
    const std::string home = test::env_value("HOME");
    const fs::path cache = !xdg.empty() ? fs::path(xdg) : fs::path(home) / ".cache";
    candidates.push_back(cache / "cxlpool" / ("fio-" + version) / "examples");
  }
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (fs::exists(c / "fio-seq-read.fio", ec)) return c;
  }
  return {};
}

const std::set<std::string> kBlockEngines = {"psync", "sync", "libaio", "io_uring", "mmap", "null"};

// The engines a job file names (fio's default psync when none); comments
// cut at ';' or '#' as fio does.
std::set<std::string> engines_of(const fs::path& file) {
  std::ifstream in(file);
  std::set<std::string> engines;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find_first_of(";#"));
    line.erase(std::remove_if(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; }), line.end());
    if (line.rfind("ioengine=", 0) == 0) engines.insert(line.substr(9));
  }
  if (engines.empty()) engines.insert("psync");
  return engines;
}

bool eligible(const fs::path& file) {
  for (const std::string& e : engines_of(file))
    if (!kBlockEngines.count(e)) return false;
  return true;
}

// What cxlpool-io does with each eligible example of fio 3.33: "" runs;
// kRefusedAtStart parses but its targets are refused when the job opens
// them; any other text is part of the parse error that refuses it.
// docs/io.md lists the same table.
const std::string kRefusedAtStart = "@start";
const std::map<std::string, std::string> kExpected = {
    {"1mbs_clients", ""},
    {"aio-read", ""},
    {"backwards-read", ""},
    {"basic-verify", ""},
    {"butterfly", ""},
    {"cmdprio-bssplit", ""},
    {"cmdprio-percentage", ""},
    {"cross-stripe-verify", ""},
    {"dedupe-global", ""},
    {"disk-zone-profile", ""},
    {"enospc-pressure", "option 'continue_on_error': not supported by cxlpool-io"},
    {"exitwhat", ""},
    {"fio-rand-RW", ""},
    {"fio-rand-read", ""},
    {"fio-rand-write", ""},
    {"fio-seq-RW", ""},
    {"fio-seq-read", ""},
    {"fio-seq-write", ""},
    {"fixed-rate-submission", ""},
    {"flow", ""},
    {"fsx", ""},
    {"iometer-file-access-server", ""},
    {"jesd219", ""},
    {"latency-profile", ""},
    {"null", ""},
    {"numa", ""},
    {"poisson-rate-submission", ""},
    {"rand-zones", ""},
    {"ssd-steadystate", ""},
    {"ssd-test", ""},
    {"steadystate", ""},
    {"surface-scan", "option 'verify': 'meta' is not supported by cxlpool-io"},
    {"tiobench-example", ""},
    {"waitfor", ""},
    {"xnvme-compare", ""},
    {"xnvme-zoned", ""},
    {"zbd-rand-write", ""},
    {"zbd-seq-read", ""},
    {"zipf", ""},
};

// Arguments an example needs as fio needs them: the xnvme files are meant
// to be run with --section=default (their [override] section reads
// ${FIO_RW} and friends).
std::vector<std::string> extra_args(const std::string& name) {
  if (name.rfind("xnvme-", 0) == 0) return {"--section=default"};
  return {};
}

// What a sample run sets beyond the small sizes: zones that fit the 2 MiB
// file (zonemode=zbd; xnvme-zoned names none, its zoned namespace would
// say), no ramp for xnvme-zoned, zbd-seq-read's region from the start instead of at 131 GiB, and
// steadystate's windows shortened to the one-second run (its targets,
// /dev/null and /dev/zero, are kept).
std::vector<std::string> sample_sets(const std::string& name, const fs::path& dir) {
  std::vector<std::string> sets;
  if (name != "steadystate") sets.push_back("filename=" + (dir / (name + ".dat")).string());
  for (const char* s : {"size=2m", "filesize=2m", "runtime=1", "startdelay=0"}) sets.emplace_back(s);
  if (name.rfind("zbd-", 0) == 0 || name == "xnvme-zoned") sets.emplace_back("zonesize=512k");
  // Its one-second ramp would swallow the whole 2 MiB written.
  if (name == "xnvme-zoned") sets.emplace_back("ramp_time=0");
  if (name == "zbd-seq-read") sets.emplace_back("offset=0");
  if (name.rfind("cmdprio-", 0) == 0) sets.push_back("write_lat_log=" + (dir / "prio-run").string());
  if (name == "steadystate") {
    sets.emplace_back("ss_dur=2s");
    sets.emplace_back("ss_ramp=0");
  }
  return sets;
}

class FioExamples : public ::testing::Test {
 protected:
  void SetUp() override {
    examples_ = examples_dir();
    if (examples_.empty())
      GTEST_SKIP() << "fio's example job files not found (Debian's fio package lacks examples/: run "
                      "scripts/fetch-fio-examples.sh, or set CXLPOOL_FIO_EXAMPLES)";
    // The root file system: O_DIRECT works there (tmpfs may refuse it).
    dir_ = fs::path("/var/tmp") / ("cxlpool-fio-examples-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  ProgramResult io(std::vector<std::string> args, int timeout_s = 60) {
    args.insert(args.begin(), io_binary());
    ProgramOptions o;
    o.timeout = std::chrono::seconds(timeout_s);
    return run_program(args, o);
  }

  std::vector<std::string> eligible_names() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(examples_)) {
      if (entry.path().extension() != ".fio" || !eligible(entry.path())) continue;
      names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path examples_;
  fs::path dir_;
};

TEST_F(FioExamples, EveryBlockEngineExampleParsesOrIsRefusedClearly) {
  int runs = 0, refused = 0, unlisted = 0, at_start = 0;
  std::string refused_list, at_start_list;
  for (const std::string& name : eligible_names()) {
    std::vector<std::string> args = {"--parse-only"};
    for (const std::string& a : extra_args(name)) args.push_back(a);
    args.push_back((examples_ / (name + ".fio")).string());
    const ProgramResult r = io(args);
    const auto it = kExpected.find(name);
    if (it == kExpected.end()) {
      ++unlisted;
      std::printf("fio example %s: not in the table (exit %d) %s\n", name.c_str(), r.exit_code, r.err.c_str());
      continue;
    }
    if (it->second.empty() || it->second == kRefusedAtStart) {
      EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
      EXPECT_NE(r.out.find("options parsed"), std::string::npos) << name;
      if (it->second.empty()) {
        ++runs;
      } else {
        ++at_start;
        at_start_list += " " + name;
      }
    } else {
      EXPECT_EQ(r.exit_code, 2) << name;
      EXPECT_NE(r.err.find(it->second), std::string::npos) << name << ": " << r.err;
      // The error names the file and line, as for any job file.
      EXPECT_NE(r.err.find(name + ".fio:"), std::string::npos) << name << ": " << r.err;
      ++refused;
      refused_list += " " + name;
    }
  }
  std::printf("fio examples (block engines): %d run, %d parse but are refused at start (%s ), %d refused (%s ), "
              "%d not in the table\n",
              runs, at_start, at_start_list.c_str(), refused, refused_list.c_str(), unlisted);
  EXPECT_GT(runs, 0);
}

TEST_F(FioExamples, ASampleRunsWithSmallSizes) {
  // Small files, a one-second runtime cap and no start delays: each
  // example's jobs with their own engines, depths, mixes and options.
  std::vector<std::string> sample = {"backwards-read", "basic-verify", "butterfly", "fixed-rate-submission",
                                     "flow", "jesd219", "null", "rand-zones", "waitfor", "zipf",
                                     "iometer-file-access-server", "numa", "xnvme-compare", "disk-zone-profile",
                                     "steadystate", "exitwhat", "zbd-rand-write", "zbd-seq-read", "xnvme-zoned",
                                     "latency-profile", "dedupe-global"};
  // The cmdprio files give some I/Os the real-time class, which needs
  // CAP_SYS_ADMIN or CAP_SYS_NICE (EPERM otherwise, as with fio).
  if (::geteuid() == 0) {
    sample.push_back("cmdprio-bssplit");
    sample.push_back("cmdprio-percentage");
  } else {
    std::printf("cmdprio-bssplit, cmdprio-percentage: not sampled (real-time I/O priority needs root)\n");
  }
  int ran = 0;
  for (const std::string& name : sample) {
    if (!fs::exists(examples_ / (name + ".fio"))) continue;
    std::vector<std::string> args = {"--output-format=json"};
    for (const std::string& a : extra_args(name)) args.push_back(a);
    // numa.fio's second job binds to nodes 0-1: on a one-node machine only
    // its first job can run (the second is refused naming node 1).
    const bool two_nodes = fs::exists("/sys/devices/system/node/node1");
    if (name == "numa" && !two_nodes) args.push_back("--section=job1");
    args.push_back((examples_ / (name + ".fio")).string());
    // The xnvme files say allow_file_create=0: the target must exist.
    if (name.rfind("xnvme-", 0) == 0) {
      std::ofstream(dir_ / (name + ".dat")).put(0);
      fs::resize_file(dir_ / (name + ".dat"), 2 << 20);
    }
    for (const std::string& set : sample_sets(name, dir_)) {
      args.push_back("--set");
      args.push_back(set);
    }
    // Logs go to the test's directory, not the working one.
    args.push_back("--set");
    args.push_back("write_bw_log=" + (dir_ / name).string());
    const ProgramResult r = io(args);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    std::uint64_t bytes = 0;
    for (const auto& job : j["jobs"]) {
      EXPECT_EQ(job["error"], 0) << name;
      bytes += job["read"]["io_bytes"].get<std::uint64_t>() + job["write"]["io_bytes"].get<std::uint64_t>();
    }
    EXPECT_GT(bytes, 0u) << name;
    ++ran;
  }
  std::printf("fio examples run for real: %d of %zu sampled\n", ran, sample.size());
  if (!fs::exists("/sys/devices/system/node/node1")) std::printf("numa.fio: job1 only (one NUMA node here)\n");
}

TEST_F(FioExamples, SteadystateRunsOnItsCharacterDevices) {
  // Its jobs write /dev/null and read /dev/zero, as with fio: size= is how
  // much each moves; /dev/zero reads back zeros at full size.
  const ProgramResult r = io({"--output-format=json", (examples_ / "steadystate.fio").string(), "--set", "runtime=1",
                              "--set", "ss_dur=2s", "--set", "ss_ramp=0", "--set", "size=1m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 2u);  // group_reporting: one entry per group
  EXPECT_GT(j["jobs"][0]["write"]["io_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["jobs"][1]["read"]["io_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(j["jobs"][1]["read"]["short_ios"], 0);
}

TEST_F(FioExamples, ZbdReadsStayBelowTheWritePointers) {
  // Write two 512 KiB zones of four, then read the 2 MiB file sequentially
  // as zbd-seq-read does: every read lands in the written megabyte (the
  // per-I/O log with offsets shows where), wrapping over it.
  const std::string file = (dir_ / "z.dat").string();
  const std::string log = (dir_ / "zr").string();
  ProgramResult r = io({"--name=w", "--filename=" + file, "--size=2m", "--zonemode=zbd", "--zonesize=512k",
                        "--rw=write", "--bs=64k", "--io_size=1m", "--name=r", "--stonewall", "--filename=" + file,
                        "--size=2m", "--zonemode=zbd", "--zonesize=512k", "--rw=read", "--bs=64k",
                        "--write_lat_log=" + log, "--log_offset=1", "--output-format=json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["jobs"][0]["write"]["io_bytes"], 1 << 20);
  EXPECT_EQ(j["jobs"][1]["read"]["io_bytes"], 2 << 20);
  std::ifstream in(log + "_clat.2.log");
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    std::vector<std::uint64_t> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(std::stoull(c));
    ASSERT_GE(cols.size(), 5u) << line;
    EXPECT_LT(cols[4], 1u << 20) << line;
  }
  EXPECT_EQ(lines, 32);
}

TEST_F(FioExamples, CmdprioPercentageLogsEachIoPriority) {
  if (::geteuid() != 0) GTEST_SKIP() << "the real-time I/O priority class needs root";
  // prioclass=3 for the job, 20% of the reads in the real-time class
  // (cmdprio_class=1), log_prio=1: the clat log's last column is each
  // I/O's ioprio value, (class << 13) | level.
  const std::string log = (dir_ / "prio").string();
  const ProgramResult r = io({(examples_ / "cmdprio-percentage.fio").string(), "--set",
                              "filename=" + (dir_ / "p.dat").string(), "--set", "size=8m", "--set",
                              "write_lat_log=" + log});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(log + "_clat.1.log");
  std::map<std::uint64_t, int> by_prio;
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    ++by_prio[std::stoull(line.substr(line.rfind(',') + 1))];
  EXPECT_EQ(lines, 64);  // 8 MiB in 128 KiB reads
  EXPECT_EQ(by_prio.size(), 2u);
  EXPECT_GT(by_prio[1 << 13], 0);   // real time, level 0
  EXPECT_GT(by_prio[3 << 13], by_prio[1 << 13]);  // idle: the other 80%
}

TEST_F(FioExamples, LatencyProfileSearchesTheDepth) {
  // latency-profile.fio with windows of 20 ms: a target no I/O misses (10 s)
  // ends the search at its iodepth of 128 (1, 2, 4, ... 128, each met); a
  // target every I/O misses (1 ns) ends it at depth 1. The job ends when
  // the search does, long before its runtime.
  for (const auto& [target, depth] : {std::pair<std::string, int>{"10s", 128}, {"1ns", 1}}) {
    const ProgramResult r = io({"--output-format=json", (examples_ / "latency-profile.fio").string(), "--set",
                                "filename=" + (dir_ / "l.dat").string(), "--set", "size=4m", "--set",
                                "latency_window=20ms", "--set", "latency_target=" + target, "--set", "runtime=60",
                                "--set", "time_based=1", "--set", "direct=0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out)["jobs"][0];
    EXPECT_EQ(j["latency_depth"], depth) << target;
    EXPECT_DOUBLE_EQ(j["latency_percentile"].get<double>(), 99.9);
    EXPECT_EQ(j["latency_window"], 20000);
    EXPECT_LT(j["job_runtime"].get<std::uint64_t>(), 60000u) << target;
  }
}

TEST_F(FioExamples, ZbdOnAFileNeedsAZoneSize) {
  // xnvme-zoned names no zonesize: its zoned namespace would give it.
  const std::string file = (dir_ / "x.dat").string();
  std::ofstream(file).put(0);
  fs::resize_file(file, 2 << 20);
  const ProgramResult r = io({"--section=default", (examples_ / "xnvme-zoned.fio").string(), "--set",
                              "filename=" + file, "--set", "size=2m"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a zoned block device needs zonesize="), std::string::npos) << r.err;
}

TEST_F(FioExamples, NumaJobOnAMissingNodeIsRefusedNamingIt) {
  if (fs::exists("/sys/devices/system/node/node1")) GTEST_SKIP() << "this machine has NUMA node 1";
  const ProgramResult r = io({(examples_ / "numa.fio").string(), "--set", "filename=" + (dir_ / "n.dat").string(),
                              "--set", "size=1m"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("NUMA node 1 does not exist"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cxlpool::integration
