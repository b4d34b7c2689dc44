// SPDX-License-Identifier: Apache-2.0
// Built-in profiles: each generates job text the parser accepts, with the
// I/O shape its description promises, and runs end to end at tiny sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "job/job_file.hpp"
#include "profiles/profiles.hpp"
#include "run/runner.hpp"

#ifndef CXLPOOL_IO_TEST_DIR
#define CXLPOOL_IO_TEST_DIR "."
#endif

namespace cxlpool::io {
namespace {

const char* const kAllProfiles[] = {
    "weights-cold-load", "layer-stream",      "layer-stream-mmap", "kv-writeback-decode", "kv-decode-readall",
    "kv-prefix-fetch",   "sparse-neuron-fetch", "mixed-serve",     "tensor-saveload",     "trace-replay",
};

class IoProfiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(CXLPOOL_IO_TEST_DIR) / ("profiles-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    trace_ = (dir_ / "trace.bt").string();
    std::ofstream(trace_) << "100 R 4096 0 8\n200 W 4096 8 8\n300 R 8192 64 16\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Tiny parameters for every profile, plus a file in the test directory.
  std::vector<std::string> tiny(std::string_view profile) const {
    static const std::map<std::string, std::vector<std::string>, std::less<>> kTiny = {
        {"weights-cold-load", {"size=256k", "block_sizes=64k:128k", "iodepths=1:4"}},
        {"layer-stream", {"layers=4", "layer_size=64k", "request=16k", "tokens=2", "compute=10"}},
        {"layer-stream-mmap", {"layers=4", "layer_size=64k", "request=8k", "tokens=2", "compute=10"}},
        {"kv-writeback-decode", {"layers=4", "token_bytes=4k", "steps=4", "step_time=40", "sequences=2"}},
        {"kv-decode-readall", {"context=16", "token_bytes=4k", "layers=2", "steps=2", "request=16k"}},
        {"kv-prefix-fetch", {"store_size=512k", "chunk=16k", "runtime=100ms"}},
        {"sparse-neuron-fetch", {"size=512k", "iodepth=4", "threads=2", "runtime=100ms"}},
        {"mixed-serve", {"store_size=512k", "chunk=16k", "writeback_size=64k", "step_time=100", "runtime=100ms"}},
        {"tensor-saveload", {"sizes=64k:1m", "engines=psync:mmap", "request=64k"}},
        {"trace-replay", {"trace=" + trace_, "size=64k", "iodepth=2"}},
    };
    auto sets = kTiny.find(profile)->second;
    sets.push_back("filename=" + (dir_ / "target.dat").string());
    return sets;
  }

  JobFile parse(std::string_view profile, std::vector<std::string> sets) {
    auto text = profile_job_text(profile, sets);
    EXPECT_TRUE(text) << profile << ": " << (text ? "" : text.error().message);
    if (!text) return {};
    auto file = parse_job_file(*text, "profile " + std::string(profile), process_environment());
    EXPECT_TRUE(file) << profile << ": " << (file ? "" : file.error().message) << "\n" << *text;
    return file ? *file : JobFile{};
  }

  std::filesystem::path dir_;
  std::string trace_;
};

TEST_F(IoProfiles, ListNamesEveryProfileWithItsSource) {
  const auto& list = list_profiles();
  ASSERT_EQ(list.size(), std::size(kAllProfiles));
  for (std::size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list[i].name, kAllProfiles[i]);
    EXPECT_FALSE(list[i].description.empty());
    EXPECT_FALSE(list[i].source.empty());
    EXPECT_FALSE(list[i].params.empty());
  }
}

TEST_F(IoProfiles, EveryProfileParsesWithDefaultsAndTinySizes) {
  for (const char* name : kAllProfiles) {
    std::vector<std::string> defaults;
    if (std::string_view(name) == "trace-replay") defaults.push_back("trace=" + trace_);
    JobFile full = parse(name, defaults);
    EXPECT_FALSE(full.jobs.empty()) << name;
    JobFile small = parse(name, tiny(name));
    ASSERT_FALSE(small.jobs.empty()) << name;
    for (const auto& job : small.jobs) {
      EXPECT_EQ(job.filenames, std::vector<std::string>{(dir_ / "target.dat").string()}) << name;
    }
  }
}

TEST_F(IoProfiles, ShapesFollowTheParameters) {
  JobFile f = parse("weights-cold-load", {"block_sizes=1m:16m", "iodepths=8:64"});
  ASSERT_EQ(f.jobs.size(), 4u);
  EXPECT_EQ(f.groups, 4);
  EXPECT_EQ(f.jobs[3].bs[kReadDir], 16u << 20);
  EXPECT_EQ(f.jobs[3].iodepth, 64u);
  EXPECT_TRUE(f.jobs[0].direct);
  EXPECT_EQ(f.jobs[0].ioengine, "libaio");

  f = parse("layer-stream", {"layers=32", "layer_size=64m", "request=1m", "tokens=4", "compute=2ms", "buffers=3"});
  ASSERT_EQ(f.jobs.size(), 1u);
  EXPECT_EQ(f.jobs[0].size, 32ull * (64 << 20));
  EXPECT_EQ(f.jobs[0].io_size, 4ull * 32 * (64 << 20));
  EXPECT_EQ(f.jobs[0].thinktime_ns, 2'000'000u);
  EXPECT_EQ(f.jobs[0].thinktime_blocks, 64u);  // one think per layer
  EXPECT_EQ(f.jobs[0].iodepth, 3u);

  f = parse("layer-stream-mmap", {});
  ASSERT_EQ(f.jobs.size(), 4u);  // 4 threads, each a slice of every layer, concurrently
  for (const auto& j : f.jobs) {
    EXPECT_EQ(j.ioengine, "mmap");
    EXPECT_EQ(j.group, 0);
    EXPECT_FALSE(j.direct);
  }
  EXPECT_EQ(f.jobs[1].offset, f.jobs[0].size);

  f = parse("kv-decode-readall", {"context=1024", "token_bytes=16k", "request=1m"});
  ASSERT_EQ(f.jobs.size(), 1u);
  const JobSpec& k = f.jobs[0];
  EXPECT_EQ(k.rw, RwMode::kReadWrite);
  // 16 reads of 1 MiB per 16 KiB write: 94% reads, bytes about 1000:1.
  EXPECT_EQ(k.rwmixread, 94u);
  const double ratio = static_cast<double>(k.rwmixread * k.bs[kReadDir]) /
                       static_cast<double>((100 - k.rwmixread) * k.bs[kWriteDir]);
  EXPECT_NEAR(ratio, 1024, 1024 * 0.05);

  f = parse("kv-prefix-fetch", {"theta=0.9"});
  EXPECT_EQ(f.jobs[0].random_distribution, Distribution::kZipf);
  EXPECT_DOUBLE_EQ(f.jobs[0].distribution_param, 0.9);
  EXPECT_TRUE(f.jobs[0].norandommap);
  EXPECT_TRUE(f.jobs[0].time_based);

  f = parse("sparse-neuron-fetch", {"threads=3"});
  ASSERT_EQ(f.jobs.size(), 3u);
  EXPECT_EQ(f.jobs[0].bsrange_min[kReadDir], 8192u);
  EXPECT_EQ(f.jobs[0].bsrange_max[kReadDir], 32768u);
  EXPECT_EQ(f.jobs[0].iodepth, 64u);

  f = parse("mixed-serve", {});
  ASSERT_EQ(f.jobs.size(), 2u);
  EXPECT_EQ(f.jobs[0].group, f.jobs[1].group);  // concurrent
  EXPECT_EQ(f.jobs[1].rw, RwMode::kWrite);
  EXPECT_EQ(f.jobs[1].offset, f.jobs[0].size);  // behind the prefix store

  f = parse("tensor-saveload", {"sizes=1m:4g", "engines=libaio:io_uring"});
  ASSERT_EQ(f.jobs.size(), 8u);
  EXPECT_EQ(f.jobs[0].rw, RwMode::kWrite);
  EXPECT_EQ(f.jobs[1].rw, RwMode::kRead);
  EXPECT_EQ(f.jobs[7].ioengine, "io_uring");
  EXPECT_EQ(f.jobs[7].size, 4ull << 30);

  f = parse("trace-replay", {"trace=" + trace_, "no_stall=1", "format=bpftrace"});
  EXPECT_EQ(f.jobs[0].trace_file, trace_);
  EXPECT_EQ(f.jobs[0].trace_format, "bpftrace");
  EXPECT_TRUE(f.jobs[0].replay_no_stall);

  f = parse("kv-prefix-fetch", {"prefill=1"});
  ASSERT_EQ(f.jobs.size(), 2u);
  EXPECT_EQ(f.jobs[0].name, "prefill");
  EXPECT_EQ(f.jobs[0].rw, RwMode::kWrite);
  EXPECT_EQ(f.jobs[1].group, 1);
}

TEST_F(IoProfiles, BadParametersAndOptionsAreErrors) {
  auto r = profile_job_text("nope", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown profile 'nope'"), std::string::npos);
  r = profile_job_text("trace-replay", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("parameter 'trace' (''): required"), std::string::npos);
  r = profile_job_text("layer-stream", {"layer_size=100k", "request=64k"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("must be a multiple of request"), std::string::npos);
  r = profile_job_text("layer-stream", {"tokens=lots"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "profile layer-stream: parameter 'tokens' ('lots'): 'lots' is not a number");
  r = profile_job_text("layer-stream", {"contxt=4"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--set contxt=4: option 'contxt': unknown (and not a parameter of profile layer-stream)");
  r = profile_job_text("tensor-saveload", {"engines=psync:sync"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("parameter 'engines'"), std::string::npos);
  // A job option is appended to every job and wins over the profile's value.
  JobFile f = parse("weights-cold-load", {"ioengine=io_uring", "block_sizes=1m:2m"});
  for (const auto& j : f.jobs) EXPECT_EQ(j.ioengine, "io_uring");
}

TEST_F(IoProfiles, EveryProfileRunsAtTinySizes) {
  for (const char* name : kAllProfiles) {
    auto sets = tiny(name);
    // The engines every build has; direct I/O is what the profiles ask for.
    if (std::string_view(name) != "layer-stream-mmap" && std::string_view(name) != "tensor-saveload") {
      sets.push_back("ioengine=psync");
    }
    JobFile f = parse(name, sets);
    ASSERT_FALSE(f.jobs.empty()) << name;
    RunOptions options;
    options.collect_logs = false;
    auto result = run_jobs(f, options);
    ASSERT_TRUE(result) << name << ": " << result.error().message;
    ASSERT_EQ(result->jobs.size(), f.jobs.size()) << name;
    std::uint64_t bytes = 0;
    for (const auto& job : result->jobs) {
      EXPECT_EQ(job.error, 0) << name << "/" << job.spec.name << ": " << job.error_message;
      bytes += job.dir[kReadDir].io_bytes + job.dir[kWriteDir].io_bytes;
    }
    EXPECT_GT(bytes, 0u) << name;
    std::filesystem::remove(dir_ / "target.dat");
  }
}

}  // namespace
}  // namespace cxlpool::io
