// SPDX-License-Identifier: Apache-2.0
// An unprivileged peer: what it may do (read the pool's state, open regions
// their mode allows), what it may not (admin operations, regions the mode
// denies, writing through a read-only handle), via the library and cxlpoolctl.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "running_pool.hpp"

namespace cxlpool::integration {
namespace {

constexpr uid_t kNobody = 65534;

TEST(Access, NonAdminPeerIsRefusedAdminOperations) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  RunningPool pool(TestConfig{.daemon = kOpenToAll});
  ASSERT_TRUE(pool.start());
  Client root(pool.daemon.socket(), "root-owner");
  cxlpool::Region secret = root.create_named("root-private", pool.emu, 64 * 1024, 0600);
  cxlpool::Region shared = root.create_named("root-public", pool.emu, 64 * 1024, 0644);
  std::memcpy(shared.data<char>(), "written by root", 16);
  const uint64_t secret_id = secret.id();
  const std::string socket = pool.daemon.socket();

  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        CHILD_EXPECT_EQ(c, ::getuid(), kNobody);
        auto conn = Connection::open(socket, "nobody");
        CHILD_EXPECT(c, conn.has_value());
        if (!conn) return;
        Connection& raw = **conn;
        // Read-only requests work; Regions shows only the caller's own.
        auto status = raw.call_for<proto::StatusReply>(proto::StatusRequest{});
        CHILD_EXPECT(c, status.has_value());
        auto tiers = raw.call_for<proto::TiersReply>(proto::TiersRequest{});
        CHILD_EXPECT(c, tiers.has_value() && tiers->tiers.size() == 2);
        auto regions = raw.call_for<proto::RegionsReply>(proto::RegionsRequest{});
        CHILD_EXPECT(c, regions.has_value() && regions->regions.empty());
        auto clients = raw.call_for<proto::ClientsReply>(proto::ClientsRequest{});
        CHILD_EXPECT(c, !clients.has_value() && clients.error().code == EPERM);
        auto migrate = raw.call_for<proto::MigrateReply>(proto::RegionMigrate{secret_id, 0});
        CHILD_EXPECT(c, !migrate.has_value() && migrate.error().code == EPERM);

        cxlpool_client* client = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "nobody-lib", &client), 0);
        if (client == nullptr) return;
        cxlpool_migrate_result result{};
        CHILD_EXPECT_EQ(c, cxlpool_region_migrate(client, secret_id, 0, &result), -EPERM);
        cxlpool_region* r = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_named_open(client, "root-private", 0, &r), -EACCES);
        CHILD_EXPECT_EQ(c, cxlpool_named_open(client, "root-public", CXLPOOL_OPEN_WRITABLE, &r), -EACCES);
        CHILD_EXPECT_EQ(c, cxlpool_named_open(client, "root-public", 0, &r), 0);
        if (r == nullptr) return;
        CHILD_EXPECT_EQ(c, cxlpool_region_writable(r), 0);
        void* addr = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_region_map(r, &addr), 0);
        CHILD_EXPECT(c, addr != nullptr && std::strcmp(static_cast<char*>(addr), "written by root") == 0);
        void* w = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cxlpool_region_fd(r), 0);
        CHILD_EXPECT(c, w == MAP_FAILED && errno == EACCES);
        // Nor may the read-only descriptor be reopened writable through /proc.
        const std::string path = "/proc/self/fd/" + std::to_string(cxlpool_region_fd(r));
        const int rw = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        CHILD_EXPECT_EQ(c, rw, -1);
        CHILD_EXPECT_EQ(c, errno, EACCES);
        if (rw >= 0) ::close(rw);
        CHILD_EXPECT_EQ(c, cxlpool_region_free(r), 0);
        cxlpool_disconnect(client);
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  EXPECT_STREQ(shared.data<char>(), "written by root");
  EXPECT_GE(stat(*pool.admin, "control.admin_denied"), 3u);

  // cxlpoolctl as that user: denied is exit code 4.
  const auto ctl = run_program({ctl_binary(), "--socket", socket, "region", "migrate", std::to_string(secret_id), "emu"},
                               {.run_as = RunAs{}});
  EXPECT_EQ(ctl.exit_code, 4) << ctl.out << ctl.err;
  EXPECT_NE(ctl.err.find("requires root"), std::string::npos) << ctl.err;
  const auto clients = run_program({ctl_binary(), "--socket", socket, "clients"}, {.run_as = RunAs{}});
  EXPECT_EQ(clients.exit_code, 4) << clients.out << clients.err;
  // ... and what it may do, it can.
  const auto tiers = run_program({ctl_binary(), "--socket", socket, "tiers"}, {.run_as = RunAs{}});
  EXPECT_EQ(tiers.exit_code, 0) << tiers.err;

  // Nothing moved: the region is still on its tier.
  auto regions = list_regions(*pool.admin);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].tier_id, pool.emu);
  root.unlink_named("root-private");
  root.unlink_named("root-public");
}

TEST(Access, SocketModeKeepsOtherUsersOut) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  DaemonProcess daemon(TestConfig{.daemon = "socket_mode = \"0660\"\n"}.render());
  ASSERT_TRUE(daemon.start());
  const std::string socket = daemon.socket();
  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        cxlpool_client* client = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "outsider", &client), -EACCES);
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  const auto ctl = run_program({ctl_binary(), "--socket", socket, "status"}, {.run_as = RunAs{}});
  EXPECT_EQ(ctl.exit_code, 4) << ctl.err;
}

}  // namespace
}  // namespace cxlpool::integration
