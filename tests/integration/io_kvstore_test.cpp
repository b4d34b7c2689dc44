// SPDX-License-Identifier: Apache-2.0
// cxlpool-io's kvstore engine against a real cxlpoold: chunks written
// through the engine read back byte for byte, a chunk never written reads
// as 0 bytes, and a write job then a read job run through run_jobs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "daemon_process.hpp"
#include "engines/engine.hpp"
#include "job/job_file.hpp"
#include "run/runner.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

constexpr std::uint32_t kChunk = 64 * 1024;

std::string kv_config() {
  return TestConfig{.tables = "[kvstore]\nslot_bytes = 65536\ndram_bytes = 2097152\ncxl_bytes = 1048576\n"
                              "admission_threshold = 1\nput_window_bytes = 1048576\n"}
      .render();
}

io::JobSpec kv_job(const std::string& socket, std::uint32_t depth) {
  io::JobSpec job;
  job.name = "kv";
  job.ioengine = "kvstore";
  job.engine_options["kv_socket"] = socket;
  job.engine_options["kv_namespace"] = "io-kvstore-test";
  job.iodepth = depth;
  return job;
}

// Submits everything, then reaps until all have completed.
std::vector<hal::IoCompletion> run_all(io::Engine& engine, const std::vector<hal::IoRequest>& reqs) {
  EXPECT_TRUE(engine.submit(reqs));
  std::vector<hal::IoCompletion> done;
  std::vector<hal::IoCompletion> out(reqs.size());
  while (done.size() < reqs.size()) {
    auto n = engine.reap(out, 1, std::chrono::seconds(5));
    EXPECT_TRUE(n) << (n ? "" : n.error().message);
    if (!n || *n == 0) break;
    done.insert(done.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(*n));
  }
  EXPECT_EQ(engine.in_flight(), 0u);
  return done;
}

TEST(IoKvStoreEngine, ChunksRoundTripAndMissesReadEmpty) {
  DaemonProcess daemon(kv_config());
  ASSERT_TRUE(daemon.start());
  auto engine = io::open_engine(kv_job(daemon.socket(), 4), io::EngineTarget{"kvstore", 16ull * kChunk, true});
  ASSERT_TRUE(engine) << engine.error().message;
  auto bufs = (*engine)->buffers(8, kChunk);
  ASSERT_TRUE(bufs) << bufs.error().message;
  ASSERT_TRUE((*engine)->start());
  std::vector<hal::IoRequest> writes;
  for (std::uint32_t i = 0; i < 4; ++i) {
    std::memset((*bufs)[i], 0x30 + static_cast<int>(i), kChunk);
    writes.push_back(hal::IoRequest{hal::IoOp::kWrite, i * kChunk, (*bufs)[i], kChunk, 100 + i});
  }
  for (const auto& c : run_all(**engine, writes)) {
    EXPECT_EQ(c.result, static_cast<std::int64_t>(kChunk)) << "write " << c.user_data;
  }
  std::vector<hal::IoRequest> reads;
  for (std::uint32_t i = 0; i < 4; ++i) {
    std::memset((*bufs)[4 + i], 0, kChunk);
    // Chunk 3 backwards, then one chunk that was never written.
    const std::uint64_t chunk = i < 3 ? 2 - i : 9;
    reads.push_back(hal::IoRequest{hal::IoOp::kRead, chunk * kChunk, (*bufs)[4 + i], kChunk, 200 + i});
  }
  for (const auto& c : run_all(**engine, reads)) {
    const std::uint32_t i = static_cast<std::uint32_t>(c.user_data - 200);
    if (i == 3) {
      EXPECT_EQ(c.result, 0) << "a chunk never written reads empty";
      continue;
    }
    ASSERT_EQ(c.result, static_cast<std::int64_t>(kChunk)) << "read " << i;
    const auto* p = reinterpret_cast<const unsigned char*>((*bufs)[4 + i]);
    const unsigned char expect = static_cast<unsigned char>(0x30 + (2 - i));
    EXPECT_EQ(p[0], expect);
    EXPECT_EQ(p[kChunk - 1], expect);
  }
  // More than iodepth at once is refused, not queued without bound.
  std::vector<hal::IoRequest> many(5, hal::IoRequest{hal::IoOp::kRead, 0, (*bufs)[0], kChunk, 1});
  auto r = (*engine)->submit(many);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EAGAIN);
}

TEST(IoKvStoreEngine, WriteThenReadJobsThroughTheRunner) {
  DaemonProcess daemon(kv_config());
  ASSERT_TRUE(daemon.start());
  const std::string dir = daemon.dir();
  auto file = io::parse_job_file("[global]\nioengine=kvstore\nkv_socket=" + daemon.socket() +
                                     "\nbs=64k\nsize=1m\niodepth=4\ndirectory=" + dir +
                                     "\n[put]\nrw=write\n[get]\nstonewall\nrw=read\n",
                                 "kv.fio", io::process_environment());
  ASSERT_TRUE(file) << file.error().message;
  auto result = io::run_jobs(*file, io::RunOptions{});
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->jobs.size(), 2u);
  for (const auto& job : result->jobs) EXPECT_EQ(job.error, 0) << job.spec.name << ": " << job.error_message;
  EXPECT_EQ(result->jobs[0].dir[io::kWriteDir].io_bytes, 1u << 20);
  EXPECT_EQ(result->jobs[1].dir[io::kReadDir].io_bytes, 1u << 20);
  EXPECT_EQ(result->jobs[1].dir[io::kReadDir].short_ios, 0u);  // every chunk the put job stored is found
}

TEST(IoKvStoreEngine, NoDaemonIsAClearError) {
  auto engine = io::open_engine(kv_job("/nonexistent/cxlpoold.sock", 1), io::EngineTarget{"kvstore", kChunk, false});
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.error().message.find("kvstore: connect to cxlpoold at /nonexistent/cxlpoold.sock"),
            std::string::npos)
      << engine.error().message;
}

}  // namespace
}  // namespace cxlpool::integration
