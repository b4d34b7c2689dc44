// SPDX-License-Identifier: Apache-2.0
// The storage engine across processes: cxlpool-devpool-blk serves a file
// with io_uring and O_DIRECT; this test (libcxlpool's cxlpool_blk_* C ABI)
// and cxlpool-io (ioengine=devpool, verify=crc32c) are its frontends. A
// backend killed with SIGKILL mid-run fails every outstanding request with
// -ENOTCONN or -ETIMEDOUT: no hang, no success it did not report.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "blk_backend_child.hpp"
#include "cxlpool/blk.h"
#include "support/child_process.hpp"
#include "support/environment.hpp"

namespace cxlpool::integration {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint64_t kSsdBytes = 64ull << 20;

// The backend as a child process whose stdout we read.
class Backend : public BlkBackendChild {
 public:
  Backend(const std::string& link, const std::string& ssd, std::vector<std::string> extra = {})
      : BlkBackendChild(arguments(link, ssd, std::move(extra))) {}

 private:
  static std::vector<std::string> arguments(const std::string& link, const std::string& ssd, std::vector<std::string> extra) {
    std::vector<std::string> args = {binary("CXLPOOL_DEVPOOL_BLK", "cxlpool-devpool-blk"), "--link-file", link, "--ssd", ssd,
                                     "--ssd-size", std::to_string(kSsdBytes), "--buffer-mib", "16", "--slots", "128"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

class DevpoolBlk : public ::testing::Test {
 protected:
  void SetUp() override {
    // The SSD file on the root file system (O_DIRECT; tmpfs may refuse it),
    // the link in shared memory.
    const std::string tag = std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::path("/var/tmp") / ("cxlpool-blk-it-" + tag);
    fs::create_directories(dir_);
    link_ = (fs::exists("/dev/shm") ? fs::path("/dev/shm") : dir_) / ("cxlpool-blk-link-" + tag);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove(link_);
  }
  std::string ssd() const { return (dir_ / "ssd").string(); }

  cxlpool_blk* open_blk(std::uint32_t timeout_ms = 0) {
    cxlpool_blk_options o{};
    o.timeout_ms = timeout_ms;
    cxlpool_blk* blk = nullptr;
    const int rc = cxlpool_blk_open(link_.c_str(), &o, &blk);
    EXPECT_EQ(rc, 0) << cxlpool_strerror(rc) << ": " << cxlpool_last_error();
    return blk;
  }

  // Submits and waits for one request.
  static cxlpool_blk_completion one(cxlpool_blk* blk, cxlpool_blk_request r) {
    cxlpool_blk_completion c{};
    c.status = 1;
    const int sent = cxlpool_blk_submit(blk, &r, 1);
    if (sent < 0) {
      c.status = sent;
      return c;
    }
    const int got = cxlpool_blk_poll(blk, &c, 1, 1, 20000);
    EXPECT_EQ(got, 1);
    return c;
  }

  fs::path dir_;
  fs::path link_;
};

TEST_F(DevpoolBlk, CAbiWritesFlushesAndReadsBack) {
  Backend backend(link_.string(), ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  cxlpool_blk* blk = open_blk();
  ASSERT_NE(blk, nullptr);
  cxlpool_blk_info info{};
  ASSERT_EQ(cxlpool_blk_get_info(blk, &info), 0);
  EXPECT_EQ(info.capacity, kSsdBytes);
  EXPECT_EQ(info.buffer_bytes, 16u << 20);
  EXPECT_GE(info.max_in_flight, 64u);
  EXPECT_EQ(info.read_only, 0u);

  constexpr std::uint32_t kIos = 64, kBytes = 64 * 1024;
  void* out = nullptr;
  void* in = nullptr;
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, kIos * kBytes, &out), 0);
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, kIos * kBytes, &in), 0);
  auto* o = static_cast<unsigned char*>(out);
  for (std::uint32_t i = 0; i < kIos * kBytes; ++i) o[i] = static_cast<unsigned char>(i * 131 + i / 4096);
  std::vector<cxlpool_blk_request> writes(kIos), reads(kIos);
  for (std::uint32_t i = 0; i < kIos; ++i) {
    const std::uint64_t where = (i * 29 % kIos) * kBytes;
    writes[i] = {CXLPOOL_BLK_WRITE, 0, where, o + i * kBytes, kBytes, 0, i};
    reads[i] = {CXLPOOL_BLK_READ, 0, where, static_cast<unsigned char*>(in) + i * kBytes, kBytes, 0, i};
  }
  for (auto* batch : {&writes, &reads}) {
    std::size_t sent = 0, done = 0;
    cxlpool_blk_completion c[16];
    while (done < kIos) {
      if (sent < kIos) {
        const int n = cxlpool_blk_submit(blk, batch->data() + sent, kIos - sent);
        ASSERT_TRUE(n > 0 || n == -EAGAIN) << cxlpool_strerror(n);
        if (n > 0) sent += static_cast<std::size_t>(n);
      }
      const int got = cxlpool_blk_poll(blk, c, 16, 1, 20000);
      ASSERT_GT(got, 0) << cxlpool_strerror(got);
      for (int k = 0; k < got; ++k) {
        EXPECT_EQ(c[k].status, 0);
        EXPECT_EQ(c[k].bytes, kBytes);
      }
      done += static_cast<std::size_t>(got);
    }
    if (batch == &writes) {
      const cxlpool_blk_completion f = one(blk, {CXLPOOL_BLK_FLUSH, 0, 0, nullptr, 0, 0, 99});
      EXPECT_EQ(f.status, 0);
      EXPECT_EQ(f.user_data, 99u);
    }
  }
  EXPECT_EQ(std::memcmp(out, in, kIos * kBytes), 0);

  // A FUA write, and the documented refusals.
  EXPECT_EQ(one(blk, {CXLPOOL_BLK_WRITE, CXLPOOL_BLK_FUA, 0, out, 4096, 0, 1}).status, 0);
  EXPECT_EQ(cxlpool_blk_submit(blk, std::vector<cxlpool_blk_request>{{CXLPOOL_BLK_READ, 0, kSsdBytes, in, 4096, 0, 2}}.data(), 1), -ERANGE);
  EXPECT_EQ(cxlpool_blk_submit(blk, std::vector<cxlpool_blk_request>{{CXLPOOL_BLK_READ, 0, 100, in, 4096, 0, 3}}.data(), 1), -EINVAL);
  // Aligned, so that only its place is wrong.
  std::unique_ptr<void, decltype(&std::free)> outside(std::aligned_alloc(4096, 8192), &std::free);
  EXPECT_EQ(cxlpool_blk_submit(blk, std::vector<cxlpool_blk_request>{{CXLPOOL_BLK_READ, 0, 0, outside.get(), 4096, 0, 4}}.data(), 1), -EFAULT);
  EXPECT_EQ(cxlpool_blk_submit(blk, std::vector<cxlpool_blk_request>{{7, 0, 0, in, 4096, 0, 5}}.data(), 1), -EINVAL);
  EXPECT_EQ(cxlpool_blk_buffer_free(blk, outside.get()), -EINVAL);
  const std::vector<unsigned char> second(o + kBytes, o + 2 * kBytes);  // the buffers go with the handle
  EXPECT_EQ(cxlpool_blk_buffer_free(blk, out), 0);
  EXPECT_EQ(cxlpool_blk_buffer_free(blk, in), 0);
  cxlpool_blk_close(blk);

  // The data is in the backend's file, where the writes put it.
  backend.kill(SIGTERM);
  EXPECT_EQ(backend.wait(), 0);
  std::ifstream file(ssd(), std::ios::binary);
  std::vector<char> block(kBytes);
  file.seekg(29 * kBytes);
  file.read(block.data(), kBytes);
  EXPECT_EQ(std::memcmp(block.data(), second.data(), kBytes), 0);
}

TEST_F(DevpoolBlk, IoToolVerifiesThroughTheEngine) {
  Backend backend(link_.string(), ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  const fs::path job = dir_ / "verify.fio";
  std::ofstream(job) << "[global]\nioengine=devpool\nfilename=" << link_.string()
                     << "\nsize=16m\niodepth=32\ndirect=1\n\n[write-verify]\nrw=randwrite\nbs=4k\nverify=crc32c\n\n"
                        "[read-big]\nstonewall\nrw=read\nbs=1m\niodepth=8\n";
  ProgramOptions o;
  o.timeout = 120s;
  const ProgramResult r = run_program({binary("CXLPOOL_IO", "cxlpool-io"), job.string()}, o);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verify       : crc32c, errors=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("READ: bw="), std::string::npos) << r.out;
}

TEST_F(DevpoolBlk, IoToolJobFailsWhenTheBackendIsKilled) {
  Backend backend(link_.string(), ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  std::thread killer([&] {
    std::this_thread::sleep_for(1s);
    backend.kill(SIGKILL);
  });
  ProgramOptions o;
  o.timeout = 60s;
  const auto start = std::chrono::steady_clock::now();
  const ProgramResult r = run_program({binary("CXLPOOL_IO", "cxlpool-io"), "--name=r", "--ioengine=devpool",
                                       "--filename=" + link_.string(), "--rw=randread", "--bs=4k", "--iodepth=32",
                                       "--direct=1", "--size=16m", "--runtime=20", "--time_based"}, o);
  killer.join();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("devpool"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s) << "the job ran on after its backend died";
  backend.wait();
}

TEST_F(DevpoolBlk, KilledBackendFailsOutstandingRequests) {
  Backend backend(link_.string(), ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  cxlpool_blk* blk = open_blk(5000);
  ASSERT_NE(blk, nullptr);
  void* buf = nullptr;
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, 32 * 65536, &buf), 0);
  std::uint64_t ok = 0, failed = 0, id = 0;
  int last_error = 0;
  bool killed = false;
  const auto start = std::chrono::steady_clock::now();
  cxlpool_blk_completion c[32];
  for (;;) {
    if (!killed && ok >= 200) {
      backend.kill(SIGKILL);
      killed = true;
    }
    std::vector<cxlpool_blk_request> reqs;
    for (int i = 0; i < 8; ++i, ++id) {
      reqs.push_back({CXLPOOL_BLK_READ, 0, (id % 1024) * 65536, static_cast<char*>(buf) + (id % 32) * 65536, 65536, 0, id});
    }
    const int sent = cxlpool_blk_submit(blk, reqs.data(), reqs.size());
    if (sent < 0 && sent != -EAGAIN) {
      EXPECT_TRUE(killed);
      EXPECT_EQ(sent, -ENOTCONN);
      break;
    }
    const int got = cxlpool_blk_poll(blk, c, 32, 1, 1000);
    if (got < 0) {
      EXPECT_TRUE(killed);
      EXPECT_TRUE(got == -ENOTCONN || got == -ETIMEDOUT) << cxlpool_strerror(got);
      break;
    }
    for (int k = 0; k < got; ++k) {
      if (c[k].status == 0) {
        EXPECT_EQ(c[k].bytes, 65536u);
        ++ok;
      } else {
        ++failed;
        last_error = c[k].status;
      }
    }
    ASSERT_LT(std::chrono::steady_clock::now() - start, 30s) << "the frontend hangs on a dead backend";
  }
  EXPECT_TRUE(killed);
  EXPECT_GT(failed, 0u);
  EXPECT_TRUE(last_error == -ENOTCONN || last_error == -ETIMEDOUT) << last_error;
  // Once gone, always gone.
  cxlpool_blk_request r{CXLPOOL_BLK_READ, 0, 0, buf, 4096, 0, 1};
  EXPECT_EQ(cxlpool_blk_submit(blk, &r, 1), -ENOTCONN);
  cxlpool_blk_close(blk);
  backend.wait();
}

TEST_F(DevpoolBlk, OpenWithoutABackendFailsFast) {
  {
    Backend backend(link_.string(), ssd());
    ASSERT_TRUE(backend.ready()) << backend.banner();
    backend.kill(SIGKILL);
    backend.wait();
  }
  // The link is formatted but nobody serves it.
  cxlpool_blk_options o{};
  o.timeout_ms = 3000;
  cxlpool_blk* blk = nullptr;
  const auto start = std::chrono::steady_clock::now();
  const int rc = cxlpool_blk_open(link_.c_str(), &o, &blk);
  EXPECT_EQ(rc, -ENOTCONN) << cxlpool_strerror(rc);
  EXPECT_EQ(blk, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(cxlpool_blk_open((dir_ / "missing").c_str(), nullptr, &blk), -ENOENT);
}

TEST_F(DevpoolBlk, HandlesTakeTurnsOnALink) {
  Backend backend(link_.string(), ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  for (int round = 0; round < 3; ++round) {
    cxlpool_blk* blk = open_blk(5000);
    ASSERT_NE(blk, nullptr) << "round " << round;
    // While it is open, a second handle is refused rather than let in.
    cxlpool_blk_options o{};
    o.timeout_ms = 200;
    cxlpool_blk* other = nullptr;
    EXPECT_EQ(cxlpool_blk_open(link_.c_str(), &o, &other), -EBUSY);
    void* buf = nullptr;
    ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, 4096, &buf), 0);
    auto* p = static_cast<unsigned char*>(buf);
    if (round > 0) {
      // What the previous handle wrote is there.
      EXPECT_EQ(one(blk, {CXLPOOL_BLK_READ, 0, 0, buf, 4096, 0, 1}).status, 0);
      EXPECT_EQ(p[0], round - 1);
    }
    std::memset(p, round, 4096);
    EXPECT_EQ(one(blk, {CXLPOOL_BLK_WRITE, CXLPOOL_BLK_FUA, 0, buf, 4096, 0, 2}).status, 0);
    cxlpool_blk_close(blk);
  }
}

TEST_F(DevpoolBlk, OpensOnADescriptorAndRefusesBadArguments) {
  Backend backend(link_.string(), ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  cxlpool_blk* blk = nullptr;
  EXPECT_EQ(cxlpool_blk_open(nullptr, nullptr, &blk), -EINVAL);
  EXPECT_EQ(cxlpool_blk_open_fd(-1, nullptr, &blk), -EINVAL);
  cxlpool_blk_options bad{};
  bad.reserved = 1;
  EXPECT_EQ(cxlpool_blk_open(link_.c_str(), &bad, &blk), -EINVAL);
  bad = {};
  bad.link_offset = 100;  // not page aligned
  EXPECT_EQ(cxlpool_blk_open(link_.c_str(), &bad, &blk), -EINVAL);
  // A file that holds no link.
  const fs::path junk = dir_ / "junk";
  std::ofstream(junk) << std::string(65536, 'x');
  EXPECT_EQ(cxlpool_blk_open(junk.c_str(), nullptr, &blk), -EPROTO);

  const int fd = ::open(link_.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(cxlpool_blk_open_fd(fd, nullptr, &blk), 0) << cxlpool_last_error();
  ::close(fd);  // the handle keeps its own description
  cxlpool_blk_info info{};
  EXPECT_EQ(cxlpool_blk_get_info(blk, &info), 0);
  EXPECT_EQ(info.capacity, kSsdBytes);
  void* buf = nullptr;
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, 4096, &buf), 0);
  EXPECT_EQ(one(blk, {CXLPOOL_BLK_READ, 0, 4096, buf, 4096, 0, 1}).status, 0);
  cxlpool_blk_completion c{};
  EXPECT_EQ(cxlpool_blk_poll(blk, &c, 1, 2, 0), -EINVAL);   // min > max
  EXPECT_EQ(cxlpool_blk_poll(blk, &c, 1, 1, 10), 0);        // nothing outstanding
  EXPECT_EQ(cxlpool_blk_submit(blk, nullptr, 1), -EINVAL);
  cxlpool_blk_close(blk);
  cxlpool_blk_close(nullptr);
}

TEST_F(DevpoolBlk, SecondBackendOnALinkIsRefused) {
  Backend first(link_.string(), ssd());
  ASSERT_TRUE(first.ready()) << first.banner();
  const ProgramResult r = run_program({binary("CXLPOOL_DEVPOOL_BLK", "cxlpool-devpool-blk"), "--link-file", link_.string(),
                                       "--ssd", (dir_ / "other").string(), "--ssd-size", "1048576"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("another backend serves this link"), std::string::npos) << r.err;
  // The first one still serves.
  cxlpool_blk* blk = open_blk();
  ASSERT_NE(blk, nullptr);
  cxlpool_blk_close(blk);
}

}  // namespace
}  // namespace cxlpool::integration
