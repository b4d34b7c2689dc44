// SPDX-License-Identifier: Apache-2.0
// Every block engine writes and reads back a pattern through the Engine
// interface: on a file of the root file system (buffered and O_DIRECT) and,
// as root with losetup, on a loop device with direct I/O. io_uring's options
// (fixedbufs, registerfiles, SQPOLL, hipri's refusal without poll queues).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engines/block_engine.hpp"
#include "engines/engine.hpp"
#include "run/file_layout.hpp"

namespace cxlpool::io {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kFileBytes = 1 << 20;
constexpr std::uint32_t kBlock = 4096;
constexpr std::uint32_t kDepth = 4;

std::string test_file(const std::string& name) {
  return (fs::path(CXLPOOL_IO_TEST_DIR) / ("engine_" + name + "_" + std::to_string(::getpid()))).string();
}

JobSpec job_for(const std::string& engine, bool direct) {
  JobSpec j;
  j.name = "t";
  j.ioengine = engine;
  j.direct = direct;
  j.iodepth = kDepth;
  return j;
}

void drain(Engine& e, std::vector<hal::IoCompletion>& done, std::size_t want) {
  std::vector<hal::IoCompletion> out(kDepth);
  while (done.size() < want) {
    auto got = e.reap(out, 1, std::chrono::seconds(10));
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_GT(*got, 0u) << "no completion within 10 s";
    done.insert(done.end(), out.begin(), out.begin() + static_cast<long>(*got));
  }
}

// Writes kDepth blocks in one batch, reads them back into the other half of
// the buffers, compares.
void write_read_back(const JobSpec& job, const std::string& path, std::uint64_t base = 0) {
  auto opened = open_engine(job, EngineTarget{path, kFileBytes, true});
  ASSERT_TRUE(opened) << opened.error().message;
  Engine& e = **opened;
  auto bufs = e.buffers(2 * kDepth, kBlock);
  ASSERT_TRUE(bufs) << bufs.error().message;
  auto started = e.start();
  ASSERT_TRUE(started) << started.error().message;
  std::vector<hal::IoRequest> reqs(kDepth);
  for (std::uint32_t i = 0; i < kDepth; ++i) {
    std::memset((*bufs)[i], static_cast<int>('a' + i), kBlock);
    reqs[i] = hal::IoRequest{hal::IoOp::kWrite, base + (i * 3 + 1) * std::uint64_t{kBlock}, (*bufs)[i], kBlock, i,
                             job.fixedbufs ? static_cast<std::int32_t>(i) : hal::kNoRegisteredBuffer};
  }
  auto ok = e.submit(reqs);
  ASSERT_TRUE(ok) << ok.error().message;
  std::vector<hal::IoCompletion> done;
  drain(e, done, kDepth);
  for (const auto& c : done) ASSERT_EQ(c.result, kBlock) << e.name() << " write " << c.user_data;
  EXPECT_EQ(e.in_flight(), 0u);
  for (std::uint32_t i = 0; i < kDepth; ++i) {
    std::memset((*bufs)[kDepth + i], 0, kBlock);
    reqs[i] = hal::IoRequest{hal::IoOp::kRead, base + (i * 3 + 1) * std::uint64_t{kBlock}, (*bufs)[kDepth + i],
                             kBlock, 100 + i,
                             job.fixedbufs ? static_cast<std::int32_t>(kDepth + i) : hal::kNoRegisteredBuffer};
  }
  ok = e.submit(reqs);
  ASSERT_TRUE(ok) << ok.error().message;
  done.clear();
  drain(e, done, kDepth);
  for (const auto& c : done) {
    ASSERT_EQ(c.result, kBlock) << e.name() << " read " << c.user_data;
    const std::uint32_t i = static_cast<std::uint32_t>(c.user_data - 100);
    EXPECT_EQ(std::memcmp((*bufs)[kDepth + i], (*bufs)[i], kBlock), 0) << e.name() << " block " << i;
  }
}

struct EngineCase {
  const char* engine;
  bool direct;
};

class BlockEngines : public ::testing::TestWithParam<EngineCase> {
 protected:
  void SetUp() override {
    path_ = test_file(std::string(GetParam().engine) + (GetParam().direct ? "_d" : "_b"));
    ASSERT_TRUE(lay_out_file(path_, kFileBytes, true));
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_P(BlockEngines, WritesAndReadsBackOnTheRootFileSystem) {
  if (!block_engine_usable(GetParam().engine)) GTEST_SKIP() << GetParam().engine << " is not compiled in";
  write_read_back(job_for(GetParam().engine, GetParam().direct), path_);
}

INSTANTIATE_TEST_SUITE_P(All, BlockEngines,
                         ::testing::Values(EngineCase{"psync", false}, EngineCase{"psync", true},
                                           EngineCase{"io_uring", false}, EngineCase{"io_uring", true},
                                           EngineCase{"libaio", false}, EngineCase{"libaio", true},
                                           EngineCase{"mmap", false}),
                         [](const auto& info) {
                           return std::string(info.param.engine) + (info.param.direct ? "_direct" : "_buffered");
                         });

class UringOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!block_engine_usable("io_uring")) GTEST_SKIP() << "io_uring is not compiled in";
    path_ = test_file("uring_opts");
    ASSERT_TRUE(lay_out_file(path_, kFileBytes, true));
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  std::string path_;
};

TEST_F(UringOptions, FixedBuffersAndRegisteredFiles) {
  JobSpec j = job_for("io_uring", true);
  j.fixedbufs = true;
  j.registerfiles = true;
  write_read_back(j, path_);
  j.registerfiles = false;
  write_read_back(j, path_);
}

TEST_F(UringOptions, SqpollRunsAndReportsItsThreadsCpu) {
  JobSpec j = job_for("io_uring", true);
  j.sqthread_poll = true;
  auto opened = open_engine(j, EngineTarget{path_, kFileBytes, true});
  if (!opened && (opened.error().code == EPERM || opened.error().code == ENOSYS))
    GTEST_SKIP() << "SQPOLL refused here: " << opened.error().message;
  ASSERT_TRUE(opened) << opened.error().message;
  // The helper thread is found and its CPU time is readable.
  EXPECT_TRUE((*opened)->helper_cpu().has_value());
  opened->reset();
  write_read_back(j, path_);
}

// The runner opens engines (and registers buffers) on one thread and runs
// the job on another: the ring is bound to the thread that calls start(),
// and a submit before that is a clear error, not a kernel EEXIST later.
TEST_F(UringOptions, RingServesTheThreadThatStartsIt) {
  JobSpec j = job_for("io_uring", true);
  j.fixedbufs = true;
  auto opened = open_engine(j, EngineTarget{path_, kFileBytes, true});
  ASSERT_TRUE(opened) << opened.error().message;
  Engine& e = **opened;
  auto bufs = e.buffers(1, kBlock);
  ASSERT_TRUE(bufs) << bufs.error().message;
  const hal::IoRequest read{hal::IoOp::kRead, 0, (*bufs)[0], kBlock, 7, 0};
  auto early = e.submit(std::span(&read, 1));
  if (early) GTEST_SKIP() << "this kernel has no single-issuer rings (before 6.1): nothing to bind";
  EXPECT_NE(early.error().message.find("bind_to_thread"), std::string::npos) << early.error().message;
  std::string failure;
  std::thread worker([&] {
    if (auto ok = e.start(); !ok) {
      failure = "start: " + ok.error().message;
      return;
    }
    if (auto ok = e.submit(std::span(&read, 1)); !ok) {
      failure = "submit: " + ok.error().message;
      return;
    }
    hal::IoCompletion c;
    auto got = e.reap(std::span(&c, 1), 1, hal::BlockDevice::kWaitForever);
    if (!got || *got != 1 || c.user_data != 7 || c.result != kBlock) failure = "reap";
  });
  worker.join();
  EXPECT_EQ(failure, "");
}

TEST_F(UringOptions, HipriWithoutPollQueuesIsAClearError) {
  JobSpec j = job_for("io_uring", true);
  j.hipri = true;
  auto opened = open_engine(j, EngineTarget{path_, kFileBytes, true});
  if (opened) GTEST_SKIP() << "this device has poll queues";
  EXPECT_NE(opened.error().message.find("poll queues"), std::string::npos) << opened.error().message;
}

TEST(Engines, RefusalsNameTheProblem) {
  const std::string path = test_file("refusals");
  ASSERT_TRUE(lay_out_file(path, kFileBytes, true));
  auto unknown = open_engine(job_for("splice", false), EngineTarget{path, kFileBytes, false});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, EINVAL);
  JobSpec fixed = job_for("psync", false);
  fixed.fixedbufs = true;
  auto psync_fixed = open_engine(fixed, EngineTarget{path, kFileBytes, false});
  ASSERT_FALSE(psync_fixed);
  EXPECT_NE(psync_fixed.error().message.find("fixedbufs"), std::string::npos);
  if (block_engine_usable("mmap")) {
    auto mmap_direct = open_engine(job_for("mmap", true), EngineTarget{path, kFileBytes, false});
    ASSERT_FALSE(mmap_direct);
    EXPECT_NE(mmap_direct.error().message.find("direct"), std::string::npos);
  }
  std::remove(path.c_str());
}

// An engine whose driver this program lacks, or that CXLPOOL_BACKENDS
// excludes, is refused by the registry with ENOTSUP and the reason, under
// the name the job gave it.
TEST(Engines, MissingOrExcludedEnginesSayWhy) {
  const std::string path = test_file("missing");
  ASSERT_TRUE(lay_out_file(path, kFileBytes, true));
  for (const char* engine : {"psync", "io_uring", "libaio", "mmap"}) {
    if (block_engine_usable(engine)) continue;
    auto opened = open_engine(job_for(engine, false), EngineTarget{path, kFileBytes, false});
    ASSERT_FALSE(opened) << engine;
    EXPECT_EQ(opened.error().code, ENOTSUP) << opened.error().message;
    EXPECT_NE(opened.error().message.find("is not compiled in: "), std::string::npos) << opened.error().message;
  }
  ASSERT_EQ(::setenv("CXLPOOL_BACKENDS", "^posix", 1), 0);
  EXPECT_FALSE(block_engine_usable("psync"));
  auto excluded = open_engine(job_for("psync", false), EngineTarget{path, kFileBytes, false});
  ::unsetenv("CXLPOOL_BACKENDS");
  ASSERT_FALSE(excluded);
  EXPECT_EQ(excluded.error().code, ENOTSUP);
  EXPECT_EQ(excluded.error().message.rfind("psync: ", 0), 0u) << excluded.error().message;
  EXPECT_NE(excluded.error().message.find("excluded by CXLPOOL_BACKENDS=^posix"), std::string::npos)
      << excluded.error().message;
  EXPECT_TRUE(block_engine_usable("psync"));
  std::remove(path.c_str());
}

// A loop device with direct I/O: the block-device path of every engine
// (BLKGETSIZE64/BLKSSZGET geometry). Needs root and losetup.
class LoopDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "loop devices need root";
    if (std::system("command -v losetup >/dev/null 2>&1") != 0) GTEST_SKIP() << "losetup is not installed";
    backing_ = test_file("loop_backing");
    ASSERT_TRUE(lay_out_file(backing_, 8 * kFileBytes, true));
    // losetup --find may name a device whose node is missing (a container's
    // /dev), so the nodes that exist are tried first.
    std::string tried;
    for (int i = 0; i < 64 && device_.empty(); ++i) {
      const std::string node = "/dev/loop" + std::to_string(i);
      struct stat st {};
      if (::stat(node.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) continue;
      const std::string cmd = "losetup --direct-io=on " + node + " " + backing_ + " 2>/dev/null";
      if (std::system(cmd.c_str()) == 0) device_ = node;
      else tried += " " + node;
    }
    if (device_.empty()) {
      const std::string cmd = "losetup --find --show --direct-io=on " + backing_ + " 2>&1";
      FILE* p = ::popen(cmd.c_str(), "r");
      ASSERT_NE(p, nullptr);
      char line[256] = {};
      const bool got = std::fgets(line, sizeof line, p) != nullptr;
      const int rc = ::pclose(p);
      std::string out = got ? line : "";
      while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
      if (rc != 0 || out.rfind("/dev/loop", 0) != 0)
        GTEST_SKIP() << "no loop device could be attached (busy:" << tried << "); losetup --find: " << out;
      device_ = out;
    }
  }
  void TearDown() override {
    if (!device_.empty()) {
      const std::string cmd = "losetup -d " + device_;
      EXPECT_EQ(std::system(cmd.c_str()), 0) << "detaching " << device_;
    }
    if (!backing_.empty()) std::remove(backing_.c_str());
  }
  std::string backing_;
  std::string device_;
};

TEST_F(LoopDevice, EveryEngineWithDirectIo) {
  for (const char* engine : {"psync", "io_uring", "libaio"}) {
    if (!block_engine_usable(engine)) continue;
    SCOPED_TRACE(engine);
    write_read_back(job_for(engine, true), device_, 4 * kFileBytes);
  }
  if (block_engine_usable("mmap")) {
    SCOPED_TRACE("mmap");
    write_read_back(job_for("mmap", false), device_, 4 * kFileBytes);
  }
}

}  // namespace
}  // namespace cxlpool::io
