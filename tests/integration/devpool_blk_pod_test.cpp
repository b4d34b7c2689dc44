// SPDX-License-Identifier: Apache-2.0
// The storage engine through the pod allocator: cxlpool-devpool-blk
// registers its SSD with cxlpoold and serves the link slots the pod table
// gives it; frontends attach with cxlpool_blk_attach (and cxlpool-io's
// devpool_socket=). Failover: one SSD file served by two backends on two
// hosts under one device name (two paths to one device); the primary is
// killed with SIGKILL while I/O is in flight and every request completes
// on the backup path, acknowledged writes intact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "blk_backend_child.hpp"
#include "cxlpool/blk.h"
#include "daemon_process.hpp"
#include "support/child_process.hpp"
#include "support/environment.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint64_t kSsdBytes = 128ull << 20;

std::string pod_config() {
  TestConfig config;
  config.tables = "[devpool]\nlink_slots = 8\nmax_devices = 8\nlink_buffer_bytes = \"16M\"\ntelemetry_ms = 20\n";
  return config.render();
}

// The writes a backend reports when it stops ("..., N writes, ...").
// The count before `what` in the backend's exit line ("N commands: R reads,
// W writes, ..."); 0 when the line is missing.
std::uint64_t count_reported(const std::string& out, const std::string& what) {
  const auto at = out.find(what);
  if (at == std::string::npos || at == 0) return 0;
  const auto start = out.rfind(' ', at - 1);
  return std::stoull(out.substr(start == std::string::npos ? 0 : start + 1, at - (start == std::string::npos ? 0 : start + 1)));
}

std::uint64_t writes_reported(const std::string& out) { return count_reported(out, " writes,"); }

// A backend registered with the daemon, as a child process.
class PodBackend : public BlkBackendChild {
 public:
  PodBackend(const std::string& socket, const std::string& host, const std::string& ssd)
      : BlkBackendChild({binary("CXLPOOL_DEVPOOL_BLK", "cxlpool-devpool-blk"), "--socket", socket, "--host", host, "--name",
                         "ssd0", "--ssd", ssd, "--ssd-size", std::to_string(kSsdBytes)}) {}
};

class DevpoolBlkPod : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string tag = std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::path("/var/tmp") / ("cxlpool-blk-pod-" + tag);
    fs::create_directories(dir_);
    daemon_ = std::make_unique<DaemonProcess>(pod_config());
    ASSERT_TRUE(daemon_->start());
  }
  void TearDown() override {
    daemon_.reset();
    fs::remove_all(dir_);
  }
  std::string ssd() const { return (dir_ / "ssd").string(); }
  std::string socket() const { return daemon_->socket(); }

  cxlpool_blk* attach(const char* preferred) {
    cxlpool_blk_options o{};
    o.timeout_ms = 5000;
    cxlpool_blk* blk = nullptr;
    const int rc = cxlpool_blk_attach(socket().c_str(), "hf", preferred, &o, &blk);
    EXPECT_EQ(rc, 0) << cxlpool_strerror(rc) << ": " << cxlpool_last_error();
    return blk;
  }

  // Runs `reqs` to completion; returns the completions by user_data.
  static std::map<std::uint64_t, cxlpool_blk_completion> run_all(cxlpool_blk* blk, std::vector<cxlpool_blk_request> reqs,
                                                                 const std::function<void(std::size_t done)>& after = {}) {
    std::map<std::uint64_t, cxlpool_blk_completion> out;
    std::size_t sent = 0;
    cxlpool_blk_completion c[32];
    const auto start = std::chrono::steady_clock::now();
    while (out.size() < reqs.size()) {
      if (sent < reqs.size()) {
        const int n = cxlpool_blk_submit(blk, reqs.data() + sent, std::min<std::size_t>(reqs.size() - sent, 32));
        EXPECT_TRUE(n > 0 || n == -EAGAIN) << cxlpool_strerror(n);
        if (n < 0 && n != -EAGAIN) break;
        if (n > 0) sent += static_cast<std::size_t>(n);
      }
      const int got = cxlpool_blk_poll(blk, c, 32, 1, 20000);
      EXPECT_GE(got, 0) << cxlpool_strerror(got);
      if (got < 0) break;
      for (int k = 0; k < got; ++k) out[c[k].user_data] = c[k];
      if (after) after(out.size());
      if (std::chrono::steady_clock::now() - start > 60s) break;
    }
    return out;
  }

  fs::path dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(DevpoolBlkPod, AttachesThroughTheAllocator) {
  PodBackend backend(socket(), "ha", ssd());
  ASSERT_TRUE(backend.ready()) << backend.banner();
  cxlpool_blk* blk = attach(nullptr);
  ASSERT_NE(blk, nullptr);
  cxlpool_blk_info info{};
  ASSERT_EQ(cxlpool_blk_get_info(blk, &info), 0);
  EXPECT_EQ(info.capacity, kSsdBytes);
  EXPECT_EQ(info.buffer_bytes, 16u << 20);
  void* buf = nullptr;
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, 64 * 4096, &buf), 0);
  auto* p = static_cast<unsigned char*>(buf);
  for (std::uint32_t i = 0; i < 64 * 4096; ++i) p[i] = static_cast<unsigned char>(i * 7 + i / 4096);
  std::vector<cxlpool_blk_request> writes;
  for (std::uint64_t i = 0; i < 64; ++i) writes.push_back({CXLPOOL_BLK_WRITE, 0, i * 4096, p + i * 4096, 4096, 0, i});
  for (const auto& [id, c] : run_all(blk, writes)) EXPECT_EQ(c.status, 0) << id;
  cxlpool_blk_close(blk);
  // On the device.
  std::ifstream file(ssd(), std::ios::binary);
  std::vector<char> data(64 * 4096);
  file.read(data.data(), static_cast<std::streamsize>(data.size()));
  std::vector<unsigned char> want(64 * 4096);
  for (std::uint32_t i = 0; i < want.size(); ++i) want[i] = static_cast<unsigned char>(i * 7 + i / 4096);
  EXPECT_EQ(std::memcmp(data.data(), want.data(), want.size()), 0);
  // No device of the kind: ENODEV.
  backend.stop();
  cxlpool_blk* none = nullptr;
  cxlpool_blk_options o{};
  o.timeout_ms = 1000;
  EXPECT_EQ(cxlpool_blk_attach(socket().c_str(), "hf", nullptr, &o, &none), -ENODEV);
  EXPECT_EQ(cxlpool_blk_attach(socket().c_str(), nullptr, nullptr, &o, &none), -EINVAL);
}

// Writes acknowledged before the primary path died read back on the
// backup path; the requests in flight at the kill complete there.
TEST_F(DevpoolBlkPod, FailoverKeepsAcknowledgedWrites) {
  PodBackend a(socket(), "ha", ssd());
  ASSERT_TRUE(a.ready()) << a.banner();
  PodBackend b(socket(), "hb", ssd());
  ASSERT_TRUE(b.ready()) << b.banner();
  cxlpool_blk* blk = attach("ha/ssd0");
  ASSERT_NE(blk, nullptr);
  constexpr std::uint32_t kBlocks = 2048, kBytes = 16384;
  void* buf = nullptr;
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, 256 * kBytes, &buf), 0);
  auto* p = static_cast<unsigned char*>(buf);
  auto pattern = [](std::uint32_t block, std::uint32_t i) { return static_cast<unsigned char>(block * 131 + i * 7 + 1); };
  // Block k's data is written from buffer slot k % 256; each write waits for its slot's previous one.
  std::vector<cxlpool_blk_request> writes;
  for (std::uint32_t k = 0; k < kBlocks; ++k) {
    writes.push_back({CXLPOOL_BLK_WRITE, k % 3 == 0 ? CXLPOOL_BLK_FUA : 0u, std::uint64_t{k} * kBytes,
                      p + (k % 256) * kBytes, kBytes, 0, k});
  }
  bool killed = false;
  std::size_t acked_before_kill = 0;
  std::map<std::uint64_t, cxlpool_blk_completion> done;
  // In rounds of 256 so that a buffer slot is rewritten only after its write completed.
  for (std::uint32_t round = 0; round < kBlocks / 256; ++round) {
    for (std::uint32_t k = round * 256; k < (round + 1) * 256; ++k) {
      for (std::uint32_t i = 0; i < kBytes; ++i) p[(k % 256) * kBytes + i] = pattern(k, i);
    }
    std::vector<cxlpool_blk_request> batch(writes.begin() + round * 256, writes.begin() + (round + 1) * 256);
    auto got = run_all(blk, batch, [&](std::size_t n) {
      if (!killed && round == 2 && n >= 64) {
        acked_before_kill = done.size() + n;
        a.kill(SIGKILL);
        killed = true;
      }
    });
    done.insert(got.begin(), got.end());
  }
  ASSERT_TRUE(killed);
  EXPECT_GE(acked_before_kill, 64u);
  ASSERT_EQ(done.size(), kBlocks);
  for (const auto& [id, c] : done) ASSERT_EQ(c.status, 0) << "write " << id << ": " << cxlpool_strerror(c.status);
  // Read everything back on the backup path.
  std::vector<cxlpool_blk_request> reads;
  void* in = nullptr;
  ASSERT_EQ(cxlpool_blk_buffer_alloc(blk, 256 * kBytes, &in), 0);
  auto* q = static_cast<unsigned char*>(in);
  std::uint32_t bad = 0;
  for (std::uint32_t round = 0; round < kBlocks / 256; ++round) {
    reads.clear();
    for (std::uint32_t k = round * 256; k < (round + 1) * 256; ++k) {
      reads.push_back({CXLPOOL_BLK_READ, 0, std::uint64_t{k} * kBytes, q + (k % 256) * kBytes, kBytes, 0, k});
    }
    for (const auto& [id, c] : run_all(blk, reads)) EXPECT_EQ(c.status, 0) << id;
    for (std::uint32_t k = round * 256; k < (round + 1) * 256; ++k) {
      for (std::uint32_t i = 0; i < kBytes; ++i) bad += q[(k % 256) * kBytes + i] != pattern(k, i) ? 1 : 0;
    }
  }
  EXPECT_EQ(bad, 0u);
  cxlpool_blk_close(blk);
  a.wait();
  // The file itself, as the device holds it.
  std::ifstream file(ssd(), std::ios::binary);
  std::vector<char> block(kBytes);
  for (std::uint32_t k : {0u, 77u, 600u, 1500u, kBlocks - 1}) {
    file.seekg(std::streamoff{k} * kBytes);
    file.read(block.data(), kBytes);
    for (std::uint32_t i = 0; i < kBytes; ++i) ASSERT_EQ(static_cast<unsigned char>(block[i]), pattern(k, i)) << k;
  }
  // The backup path ran the writes after the kill (less those the primary
  // had answered before it died, which the frontend reads after the kill).
  const std::string rest = b.stop();
  EXPECT_GE(writes_reported(rest), kBlocks - acked_before_kill - 256) << rest;
}

// cxlpool-io through the allocator, verify=crc32c, while the primary path
// is killed: the job completes without an error and the verify passes.
TEST_F(DevpoolBlkPod, IoToolVerifiesAcrossAFailover) {
  PodBackend a(socket(), "ha", ssd());
  ASSERT_TRUE(a.ready()) << a.banner();
  PodBackend b(socket(), "hb", ssd());
  ASSERT_TRUE(b.ready()) << b.banner();
  const fs::path job = dir_ / "verify.fio";
  std::ofstream(job) << "[global]\nioengine=devpool\ndevpool_socket=" << socket()
                     << "\ndevpool_host=hf\ndevpool_device=ha/ssd0\nfilename=pod\nsize=96m\niodepth=32\ndirect=1\n\n"
                        "[write-verify]\nrw=randwrite\nbs=4k\nverify=crc32c\n";
  std::thread killer([&] {
    std::this_thread::sleep_for(400ms);
    a.kill(SIGKILL);
  });
  ProgramOptions o;
  o.timeout = 120s;
  const ProgramResult r = run_program({binary("CXLPOOL_IO", "cxlpool-io"), job.string()}, o);
  killer.join();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verify       : crc32c, errors=0"), std::string::npos) << r.out;
  a.wait();
  // The backup path served the rest of the job: the writes still to do, or
  // (on a machine that wrote all 96 MiB before the kill) the verify reads.
  const std::string rest = b.stop();
  EXPECT_GT(count_reported(rest, " commands:"), 0u) << rest;
}

}  // namespace
}  // namespace cxlpool::integration
