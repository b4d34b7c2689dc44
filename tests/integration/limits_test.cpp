// SPDX-License-Identifier: Apache-2.0
// The daemon's limits and refusals, each with its documented errno.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "running_pool.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

uint32_t connected_clients(Connection& admin) {
  auto status = admin.call_for<proto::StatusReply>(proto::StatusRequest{});
  return status ? status->clients : 0;
}

TEST(Limits, MaxClientsRefusesTheNextConnectionWithEusers) {
  DaemonProcess daemon(TestConfig{.daemon = "max_clients = 3\nadmin_reserved_clients = 1\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  cxlpool_client* c1 = nullptr;
  cxlpool_client* c2 = nullptr;
  ASSERT_EQ(cxlpool_connect(daemon.socket().c_str(), "one", &c1), 0);
  ASSERT_EQ(cxlpool_connect(daemon.socket().c_str(), "two", &c2), 0);
  ASSERT_EQ(connected_clients(*admin), 3u);

  // Repeated: the refusal must not depend on who closes first.
  constexpr int kAttempts = 20;
  for (int i = 0; i < kAttempts; ++i) {
    cxlpool_client* extra = nullptr;
    EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "extra", &extra), -EUSERS) << "attempt " << i;
    EXPECT_EQ(extra, nullptr);
    EXPECT_NE(std::string(cxlpool_last_error()).find("max_clients"), std::string::npos) << cxlpool_last_error();
    if (extra != nullptr) cxlpool_disconnect(extra);
  }
  EXPECT_EQ(stat(*admin, "clients.refused"), static_cast<uint64_t>(kAttempts));
  EXPECT_EQ(connected_clients(*admin), 3u);

  cxlpool_disconnect(c2);
  ASSERT_TRUE(wait_until([&] { return connected_clients(*admin) == 2; }, 2s));
  cxlpool_client* c3 = nullptr;
  EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "three", &c3), 0);
  cxlpool_disconnect(c3);
  cxlpool_disconnect(c1);
}

TEST(Limits, MaxRegionsPerClientGivesEmfile) {
  RunningPool pool(TestConfig{.daemon = "max_regions_per_client = 2\n"});
  ASSERT_TRUE(pool.start());
  EXPECT_EQ(pool.admin->hello().max_regions, 2u);

  Client client(pool.daemon.socket(), "hoarder");
  cxlpool::Region a = client.alloc(pool.emu, 4096);
  cxlpool::Region b = client.create_named("second", pool.emu, 4096);
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client.get(), pool.emu, 4096, 0, &r), -EMFILE);
  EXPECT_EQ(cxlpool_named_create(client.get(), "third", pool.emu, 4096, 0600, 0, &r), -EMFILE);
  EXPECT_EQ(cxlpool_named_open(client.get(), "second", 0, &r), -EMFILE);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(list_regions(*pool.admin).size(), 2u);

  // The limit is per client.
  Client other(pool.daemon.socket(), "other");
  cxlpool::Region c = other.open_named("second");
  cxlpool::Region d = other.alloc(pool.emu, 4096);

  a.free();
  cxlpool::Region e = client.alloc(pool.emu, 4096);
  EXPECT_EQ(e.size(), 4096u);
  client.unlink_named("second");
}

TEST(Limits, MaxRegionSizeGivesE2big) {
  RunningPool pool(TestConfig{.tables = "[pool]\nmax_region_size = \"1M\"\n"});
  ASSERT_TRUE(pool.start());
  Client client(pool.daemon.socket(), "big");
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client.get(), pool.emu, 2 * kMiB, 0, &r), -E2BIG);
  EXPECT_EQ(cxlpool_region_alloc(client.get(), pool.emu, kMiB + 1, 0, &r), -E2BIG);
  EXPECT_EQ(cxlpool_named_create(client.get(), "huge", pool.emu, 2 * kMiB, 0600, 0, &r), -E2BIG);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 0u);
  cxlpool::Region ok = client.alloc(pool.emu, kMiB);
  EXPECT_EQ(ok.size(), kMiB);
}

TEST(Limits, UnknownTierAndBadArguments) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  Client client(daemon.socket(), "confused");
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client.get(), 99, 4096, 0, &r), -ENOENT);
  EXPECT_EQ(cxlpool_named_create(client.get(), "nowhere", 99, 4096, 0600, 0, &r), -ENOENT);
  cxlpool_tier_info info{};
  EXPECT_EQ(cxlpool_tier_by_name(client.get(), "no-such-tier", &info), -ENOENT);
  EXPECT_EQ(cxlpool_region_alloc(client.get(), 0, 0, 0, &r), -EINVAL);
  EXPECT_EQ(cxlpool_named_create(client.get(), ".hidden", 0, 4096, 0600, 0, &r), -EINVAL);
  EXPECT_EQ(cxlpool_named_open(client.get(), "absent", 0, &r), -ENOENT);
  EXPECT_EQ(cxlpool_named_unlink(client.get(), "absent"), -ENOENT);
  EXPECT_EQ(r, nullptr);
  // Errors on a request leave the connection usable.
  EXPECT_GE(cxlpool_tiers(client.get(), nullptr, 0), 2);
}

TEST(Limits, NamedCreateTwiceGivesEexist) {
  RunningPool pool;
  ASSERT_TRUE(pool.start());
  Client one(pool.daemon.socket(), "one");
  Client two(pool.daemon.socket(), "two");
  cxlpool::Region first = one.create_named("twice", pool.emu, 8192);
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_named_create(one.get(), "twice", pool.emu, 8192, 0600, 0, &r), -EEXIST);
  EXPECT_EQ(cxlpool_named_create(two.get(), "twice", pool.emu, 4096, 0600, 0, &r), -EEXIST);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 8192u);

  // The name is free again once unlinked, even while the old region lives on.
  one.unlink_named("twice");
  cxlpool::Region second = two.create_named("twice", pool.emu, 4096);
  EXPECT_NE(second.id(), first.id());
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 8192u + 4096u);
  first.free();
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 4096u);
  two.unlink_named("twice");
}

TEST(Limits, UnlinkByNonOwnerGivesEperm) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  RunningPool pool(TestConfig{.daemon = kOpenToAll});
  ASSERT_TRUE(pool.start());
  Client owner(pool.daemon.socket(), "owner");
  cxlpool::Region region = owner.create_named("roots", pool.emu, 4096, 0666);
  const std::string socket = pool.daemon.socket();

  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        cxlpool_client* client = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "stranger", &client), 0);
        if (client == nullptr) return;
        CHILD_EXPECT_EQ(c, cxlpool_named_unlink(client, "roots"), -EPERM);
        // Its own name it may unlink.
        cxlpool_region* mine = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_named_create(client, "strangers", pool.emu, 4096, 0600, 0, &mine), 0);
        CHILD_EXPECT_EQ(c, cxlpool_named_unlink(client, "strangers"), 0);
        CHILD_EXPECT_EQ(c, cxlpool_region_free(mine), 0);
        cxlpool_disconnect(client);
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  auto regions = list_regions(*pool.admin);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].name, "roots");
  owner.unlink_named("roots");
}

// The rest need a second user: the limits are for non-admins.
TEST(Limits, OneUidGetsAtMostMaxClientsPerUidConnections) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  DaemonProcess daemon(
      TestConfig{.daemon = std::string(kOpenToAll) + "max_clients_per_uid = 2\nadmin_reserved_clients = 0\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  const std::string socket = daemon.socket();

  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        cxlpool_client* one = nullptr;
        cxlpool_client* two = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "one", &one), 0);
        CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "two", &two), 0);
        for (int i = 0; i < 3; ++i) {
          cxlpool_client* extra = nullptr;
          CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "extra", &extra), -EUSERS);
          CHILD_EXPECT(c, std::string(cxlpool_last_error()).find("max_clients_per_uid=2") != std::string::npos);
          if (extra != nullptr) cxlpool_disconnect(extra);
        }
        // A connection closed is a slot back.
        cxlpool_disconnect(two);
        bool back = false;
        for (int i = 0; i < 200 && !back; ++i) {
          cxlpool_client* again = nullptr;
          back = cxlpool_connect(socket.c_str(), "again", &again) == 0;
          if (back) cxlpool_disconnect(again);
          else ::usleep(10000);
        }
        CHILD_EXPECT(c, back);
        cxlpool_disconnect(one);
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  // At least the three refusals; a retry that came before the daemon saw the
  // close counts too.
  EXPECT_GE(stat(*admin, "clients.refused_per_uid"), 3u);
  EXPECT_GE(stat(*admin, "clients.refused"), 3u);

  // Admins are bounded by max_clients only.
  std::vector<cxlpool_client*> mine;
  for (int i = 0; i < 4; ++i) {
    cxlpool_client* c = nullptr;
    EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "admin-many", &c), 0) << cxlpool_last_error();
    if (c != nullptr) mine.push_back(c);
  }
  for (auto* c : mine) cxlpool_disconnect(c);
}

TEST(Limits, TheLastSlotsAreKeptForAdmins) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  DaemonProcess daemon(
      TestConfig{.daemon = std::string(kOpenToAll) + "max_clients = 4\nadmin_reserved_clients = 2\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());  // 1 of 4
  ASSERT_TRUE(admin);
  const std::string socket = daemon.socket();

  // Another user takes every slot it may (the second of 4) and holds it.
  ForkedChild child(
      [&](int report_fd) {
        cxlpool_client* held = nullptr;
        if (cxlpool_connect(socket.c_str(), "holder", &held) != 0) {
          (void)!::write(report_fd, "connect failed\n", 15);
          return 1;
        }
        cxlpool_client* more = nullptr;
        const int rc = cxlpool_connect(socket.c_str(), "more", &more);
        const std::string line = std::to_string(rc) + " " + cxlpool_last_error() + "\n";
        (void)!::write(report_fd, line.data(), line.size());
        for (;;) ::pause();  // holds its slot until killed
      },
      RunAs{});
  const auto line = child.read_line(std::chrono::seconds(10));
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind(std::to_string(-EUSERS) + " ", 0), 0u) << *line;
  EXPECT_NE(line->find("kept for admins (admin_reserved_clients)"), std::string::npos) << *line;
  EXPECT_EQ(stat(*admin, "clients.refused_reserved"), 1u);
  ASSERT_EQ(connected_clients(*admin), 2u);

  // Root still gets in, up to max_clients.
  cxlpool_client* third = nullptr;
  cxlpool_client* fourth = nullptr;
  EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "admin-3", &third), 0) << cxlpool_last_error();
  EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "admin-4", &fourth), 0) << cxlpool_last_error();
  cxlpool_client* fifth = nullptr;
  EXPECT_EQ(cxlpool_connect(daemon.socket().c_str(), "admin-5", &fifth), -EUSERS);
  EXPECT_NE(std::string(cxlpool_last_error()).find("max_clients=4"), std::string::npos) << cxlpool_last_error();
  EXPECT_EQ(stat(*admin, "clients.refused"), 2u);
  cxlpool_disconnect(third);
  cxlpool_disconnect(fourth);
  child.kill(SIGKILL);
  EXPECT_GE(child.wait(std::chrono::seconds(5)), 0);
}

}  // namespace
}  // namespace cxlpool::integration
