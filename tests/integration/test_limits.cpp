// SPDX-License-Identifier: Apache-2.0
// The daemon's limits and refusals, each with its documented errno.
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

uint32_t connected_clients(Connection& admin) {
  auto status = admin.call_for<proto::StatusReply>(proto::StatusRequest{});
  return status ? status->clients : 0;
}

TEST(Limits, MaxClientsRefusesTheNextConnectionWithEusers) {
  DaemonProcess daemon(TestConfig{.daemon = "max_clients = 3\n"}.render());
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
  DaemonProcess daemon(TestConfig{.daemon = "max_regions_per_client = 2\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->hello().max_regions, 2u);
  const uint32_t emu = tier_named(*admin, kEmuTier).id;

  Client client(daemon.socket(), "hoarder");
  cxlpool::Region a = client.alloc(emu, 4096);
  cxlpool::Region b = client.create_named("second", emu, 4096);
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client.get(), emu, 4096, 0, &r), -EMFILE);
  EXPECT_EQ(cxlpool_named_create(client.get(), "third", emu, 4096, 0600, 0, &r), -EMFILE);
  EXPECT_EQ(cxlpool_named_open(client.get(), "second", 0, &r), -EMFILE);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(list_regions(*admin).size(), 2u);

  // The limit is per client.
  Client other(daemon.socket(), "other");
  cxlpool::Region c = other.open_named("second");
  cxlpool::Region d = other.alloc(emu, 4096);

  a.free();
  cxlpool::Region e = client.alloc(emu, 4096);
  EXPECT_EQ(e.size(), 4096u);
  client.unlink_named("second");
}

TEST(Limits, MaxRegionSizeGivesE2big) {
  DaemonProcess daemon(TestConfig{.tables = "[pool]\nmax_region_size = \"1M\"\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  const uint32_t emu = tier_named(*admin, kEmuTier).id;
  Client client(daemon.socket(), "big");
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client.get(), emu, 2 * kMiB, 0, &r), -E2BIG);
  EXPECT_EQ(cxlpool_region_alloc(client.get(), emu, kMiB + 1, 0, &r), -E2BIG);
  EXPECT_EQ(cxlpool_named_create(client.get(), "huge", emu, 2 * kMiB, 0600, 0, &r), -E2BIG);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(tier_used(*admin, kEmuTier), 0u);
  cxlpool::Region ok = client.alloc(emu, kMiB);
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
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  const uint32_t emu = tier_named(*admin, kEmuTier).id;
  Client one(daemon.socket(), "one");
  Client two(daemon.socket(), "two");
  cxlpool::Region first = one.create_named("twice", emu, 8192);
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_named_create(one.get(), "twice", emu, 8192, 0600, 0, &r), -EEXIST);
  EXPECT_EQ(cxlpool_named_create(two.get(), "twice", emu, 4096, 0600, 0, &r), -EEXIST);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(tier_used(*admin, kEmuTier), 8192u);

  // The name is free again once unlinked, even while the old region lives on.
  one.unlink_named("twice");
  cxlpool::Region second = two.create_named("twice", emu, 4096);
  EXPECT_NE(second.id(), first.id());
  EXPECT_EQ(tier_used(*admin, kEmuTier), 8192u + 4096u);
  first.free();
  EXPECT_EQ(tier_used(*admin, kEmuTier), 4096u);
  two.unlink_named("twice");
}

TEST(Limits, UnlinkByNonOwnerGivesEperm) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  DaemonProcess daemon(TestConfig{.daemon = "socket_mode = \"0666\"\nadmin_groups = []\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  const uint32_t emu = tier_named(*admin, kEmuTier).id;
  Client owner(daemon.socket(), "owner");
  cxlpool::Region region = owner.create_named("roots", emu, 4096, 0666);
  const std::string socket = daemon.socket();

  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        cxlpool_client* client = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_connect(socket.c_str(), "stranger", &client), 0);
        if (client == nullptr) return;
        CHILD_EXPECT_EQ(c, cxlpool_named_unlink(client, "roots"), -EPERM);
        // Its own name it may unlink.
        cxlpool_region* mine = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_named_create(client, "strangers", emu, 4096, 0600, 0, &mine), 0);
        CHILD_EXPECT_EQ(c, cxlpool_named_unlink(client, "strangers"), 0);
        CHILD_EXPECT_EQ(c, cxlpool_region_free(mine), 0);
        cxlpool_disconnect(client);
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  auto regions = list_regions(*admin);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].name, "roots");
  owner.unlink_named("roots");
}

}  // namespace
}  // namespace cxlpool::integration
