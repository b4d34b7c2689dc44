// SPDX-License-Identifier: Apache-2.0
// CXLPOOL_BACKENDS on the real daemon: an excluded backend is reported as
// excluded by `cxlpoolctl backends` and never chosen (the KV store's SSD log
// runs on posix instead of io_uring, chunks still round-trip through it), and
// a filter that names no backend stops the daemon before it starts anything.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ctl_runner.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "daemon_process.hpp"
#include "kv_connection.hpp"
#include "support/child_process.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kExitStart = 4;
constexpr uint64_t kSlot = 64 * 1024;
constexpr uint32_t kChunkTokens = 16;

// A KV store of 4 DRAM and 4 CXL slots over an SSD log in `dir`: the ninth
// chunk put goes to the SSD.
std::string kv_config(const std::string& dir, const std::string& engine) {
  std::ostringstream t;
  t << "[kvstore]\n"
    << "slot_bytes = " << kSlot << "\n"
    << "dram_bytes = " << 4 * kSlot << "\n"
    << "cxl_bytes = " << 4 * kSlot << "\n"
    << "admission_threshold = 1\n"
    << "put_window_bytes = " << 16 * kSlot << "\n"
    << "ssd_path = \"" << dir << "/kv-ssd.img\"\n"
    << "ssd_bytes = " << 32 * kMiB << "\n"
    << "ssd_region_bytes = " << 256 * 1024 << "\n"
    << "ssd_engine = \"" << engine << "\"\n";
  return TestConfig{.tables = t.str()}.render();
}

const json* find_named(const json& array, const std::string& name) {
  for (const auto& e : array) {
    if (e.at("name") == name) return &e;
  }
  return nullptr;
}

// Chunk i of the test holds bytes derived from i.
std::vector<std::byte> chunk(size_t i) {
  std::vector<std::byte> out(kSlot);
  for (size_t b = 0; b < out.size(); ++b) out[b] = static_cast<std::byte>((i * 131 + b * 7) & 0xff);
  return out;
}

TEST(Backends, AnExcludedEngineIsReportedAndTheKvStoreRunsOnPosix) {
  DaemonProcess daemon(TestConfig{}.render());
  daemon.write_config(kv_config(daemon.dir(), "auto"));
  ASSERT_TRUE(daemon.start({.env = {"CXLPOOL_BACKENDS=^uring"}}));

  const json backends = run_ctl_json(daemon.socket(), {"backends"});
  const json* uring = find_named(backends, "uring");
  ASSERT_NE(uring, nullptr) << backends.dump();
  // A build without liburing says so instead; posix runs the log either way.
  const bool uring_built = uring->at("state") != "not compiled";
  if (uring_built) {
    EXPECT_EQ(uring->at("state"), "not present") << uring->dump();
    EXPECT_EQ(uring->at("detail"), "excluded by CXLPOOL_BACKENDS=^uring") << uring->dump();
  }
  const json* posix = find_named(backends, "posix");
  ASSERT_NE(posix, nullptr);
  EXPECT_EQ(posix->at("state"), "available") << posix->dump();
  // Other classes keep their backends.
  const json* emu = find_named(backends, "emu");
  ASSERT_NE(emu, nullptr);
  EXPECT_EQ(emu->at("state"), "available") << emu->dump();
  const auto table = run_ctl(daemon.socket(), {"backends"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  if (uring_built) {
    EXPECT_NE(table.out.find("excluded by CXLPOOL_BACKENDS=^uring"), std::string::npos) << table.out;
  }

  // The SSD log was opened through posix, and the log says why not io_uring.
  const json kv = run_ctl_json(daemon.socket(), {"kv", "status"});
  EXPECT_NE(kv.at("detail").get<std::string>().find(" through posix"), std::string::npos) << kv.dump();
  if (uring_built) {
    EXPECT_NE(daemon.log().find("io_uring skipped (excluded by CXLPOOL_BACKENDS=^uring); using the posix engine"),
              std::string::npos)
        << daemon.log();
  }

  // Chunks beyond DRAM and CXL go to the SSD log and come back intact.
  KvConnection session(daemon.socket(), "backends-kv");
  ASSERT_TRUE(session.ok()) << cxlpool_strerror(session.error);
  cxlpool_kv* kvs = session.kv;
  const auto spec = kv_namespace_spec("backends-model", "backends-layout", kChunkTokens);
  cxlpool_kv_namespace ns{};
  ASSERT_EQ(cxlpool_kv_namespace_open(kvs, &spec, &ns), 0);
  std::vector<uint32_t> tokens(12 * kChunkTokens);
  for (size_t t = 0; t < tokens.size(); ++t) tokens[t] = static_cast<uint32_t>(t * 7919 % 128000);
  std::vector<cxlpool_kv_key> keys(tokens.size() / kChunkTokens + 1);
  const int n = cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, keys.data(), keys.size());
  ASSERT_EQ(n, 12);
  keys.resize(12);
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto bytes = chunk(i);
    const void* data = bytes.data();
    ASSERT_EQ(cxlpool_kv_put(kvs, ns.id, &keys[i], 1, &data, kSlot), 1) << i;
  }
  std::vector<cxlpool_kv_location> locs(keys.size());
  ASSERT_EQ(cxlpool_kv_lookup(kvs, ns.id, keys.data(), static_cast<uint32_t>(keys.size()), locs.data()), 12);
  ASSERT_EQ(locs[0].tier, CXLPOOL_KV_TIER_SSD) << "the oldest chunk is on the SSD log";
  uint64_t lease = 0;
  cxlpool_kv_location got{};
  ASSERT_EQ(cxlpool_kv_get(kvs, ns.id, &keys[0], 1, &lease, &got), 1);
  ASSERT_NE(got.data, nullptr);
  ASSERT_EQ(got.length, kSlot);
  EXPECT_EQ(std::memcmp(got.data, chunk(0).data(), kSlot), 0) << "chunk 0 read back from the SSD log";
  EXPECT_EQ(cxlpool_kv_release(kvs, lease), 0);
}

TEST(Backends, AnEngineTheConfigNamesButTheFilterExcludesStopsTheDaemon) {
  DaemonProcess daemon(TestConfig{}.render());
  daemon.write_config(kv_config(daemon.dir(), "io_uring"));
  auto run = run_program({daemon_binary(), "--config", daemon.config_path(), "--state-dir", daemon.dir()},
                         {.env = {"CXLPOOL_BACKENDS=^uring"}, .timeout = 15s});
  EXPECT_EQ(run.exit_code, kExitStart) << run.err;
  if (run.err.find("BlockEngine backend 'uring' is not compiled in") != std::string::npos) {
    GTEST_SKIP() << "this build has no io_uring engine to exclude";
  }
  EXPECT_NE(run.err.find("BlockEngine backend 'uring' is excluded by CXLPOOL_BACKENDS=^uring"), std::string::npos)
      << run.err;
}

TEST(Backends, AFilterNamingNoBackendStopsTheDaemonWithTheReason) {
  DaemonProcess daemon(TestConfig{}.render());
  auto run = run_program({daemon_binary(), "--config", daemon.config_path(), "--state-dir", daemon.dir()},
                         {.env = {"CXLPOOL_BACKENDS=posix,iouring"}, .timeout = 15s});
  EXPECT_EQ(run.exit_code, kExitStart) << run.err;
  EXPECT_NE(run.err.find("cannot start: CXLPOOL_BACKENDS='posix,iouring': no backend named 'iouring' (known: "),
            std::string::npos)
      << run.err;
  // Nothing was started: no socket was ever made.
  EXPECT_EQ(::access(daemon.socket().c_str(), F_OK), -1);
}

}  // namespace
}  // namespace cxlpool::integration
