// SPDX-License-Identifier: Apache-2.0
// The daemon as a process: clean shutdown on SIGTERM, one daemon per state
// directory, and --check-config.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <string>

#include "support/child_process.hpp"
#include "support/whole_file.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "log_lines.hpp"
#include "pool_queries.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// cxlpoold's exit codes (daemon/main.cpp).
constexpr int kExitConfig = 3;
constexpr int kExitStart = 4;

using test::read_file;

TEST(Lifecycle, SigtermShutsDownCleanlyWhileClientsHoldRegions) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  Client client(daemon.socket(), "holder");
  cxlpool_tier_info emu{};
  ASSERT_EQ(cxlpool_tier_by_name(client.get(), kEmuTier, &emu), 0);
  cxlpool::Region leased = client.alloc(emu.id, kMiB, CXLPOOL_ALLOC_POPULATE);
  cxlpool::Region named = client.create_named("outlives-nothing", emu.id, 64 * 1024, 0600);
  std::strcpy(named.data<char>(), "still mapped");

  const auto signalled = std::chrono::steady_clock::now();
  daemon.send_signal(SIGTERM);
  const int result = daemon.wait_exit(5s);
  const auto elapsed = std::chrono::steady_clock::now() - signalled;
  EXPECT_EQ(result, 0) << "exit status";
  EXPECT_LT(elapsed, 5s);
  EXPECT_FALSE(fs::exists(daemon.socket())) << "the socket file must be removed";
  EXPECT_NE(daemon.log().find("stopped"), std::string::npos);
  EXPECT_EQ(line_repeating_its_logger(daemon.log()), "") << "each line names its component once";

  cxlpool_tier_info tiers[4];
  EXPECT_EQ(cxlpool_tiers(client.get(), tiers, 4), -ENOTCONN);
  EXPECT_EQ(cxlpool_tiers(client.get(), tiers, 4), -ENOTCONN) << "and stays so";
  // Local mappings survive the daemon; freeing is still safe.
  EXPECT_STREQ(named.data<char>(), "still mapped");
  EXPECT_NO_THROW(named.free());
  EXPECT_NO_THROW(leased.free());
  cxlpool_client* late = nullptr;
  EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "late", &late), -ENOENT);
}

TEST(Lifecycle, SecondDaemonOnTheSameStateDirRefusesToStart) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  auto second = run_program({daemon_binary(), "--config", daemon.config_path(), "--state-dir", daemon.dir()},
                            {.timeout = 15s});
  EXPECT_EQ(second.exit_code, kExitStart) << second.err;
  EXPECT_NE(second.err.find("another cxlpoold is running"), std::string::npos) << second.err;

  // The first one is untouched: same socket, same lock owner, still serving.
  EXPECT_TRUE(daemon.running());
  EXPECT_TRUE(fs::exists(daemon.socket()));
  EXPECT_EQ(read_file(daemon.dir() + "/cxlpoold.lock"), std::to_string(daemon.pid()) + "\n");
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  auto status = admin->call_for<proto::StatusReply>(proto::StatusRequest{});
  ASSERT_TRUE(status);
  EXPECT_EQ(status->pid, static_cast<uint32_t>(daemon.pid()));
}

TEST(Lifecycle, CheckConfigValidatesWithoutStarting) {
  DaemonProcess dir(TestConfig{}.render());  // never started: a directory with a valid file
  auto ok = run_program({daemon_binary(), "--check-config", "--config", dir.config_path(), "--state-dir", dir.dir()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("configuration OK"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("1 emulated tier"), std::string::npos) << ok.out;
  EXPECT_FALSE(fs::exists(dir.socket()));

  const std::string bad = dir.dir() + "/bad.toml";
  std::ofstream(bad) << "[daemon]\nlog_level = \"info\"\n[numa]\ncapacity_percent = 150\n";
  auto out_of_range = run_program({daemon_binary(), "--check-config", "--config", bad, "--state-dir", dir.dir()});
  EXPECT_EQ(out_of_range.exit_code, kExitConfig);
  EXPECT_NE(out_of_range.err.find(bad + ":4: numa.capacity_percent:"), std::string::npos) << out_of_range.err;

  const std::string typo = dir.dir() + "/typo.toml";
  std::ofstream(typo) << "[daemon]\nmax_client = 3\n";
  auto unknown = run_program({daemon_binary(), "--check-config", "--config", typo, "--state-dir", dir.dir()});
  EXPECT_EQ(unknown.exit_code, kExitConfig);
  EXPECT_NE(unknown.err.find(typo + ":2: daemon.max_client:"), std::string::npos) << unknown.err;
  EXPECT_FALSE(fs::exists(dir.socket()));
}

}  // namespace
}  // namespace cxlpool::integration
