// SPDX-License-Identifier: Apache-2.0
// Per-uid, per-tier quotas as configured, and their reload with SIGHUP.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "running_pool.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

std::string quota_tables(const std::string& default_bytes) {
  return "[quota]\ndefault_bytes = " + default_bytes + "\n";
}

// Allocates and returns the error (0 on success, the region then freed).
int try_alloc(Client& client, uint32_t tier, uint64_t size) {
  cxlpool_region* region = nullptr;
  const int rc = cxlpool_region_alloc(client.get(), tier, size, 0, &region);
  if (rc == 0) cxlpool_region_free(region);
  return rc;
}

TEST(Quota, DefaultQuotaIsEnforcedExactly) {
  RunningPool pool(TestConfig{.tables = quota_tables("\"8M\"")});
  ASSERT_TRUE(pool.start());
  Client client(pool.daemon.socket(), "quota");

  cxlpool::Region first = client.alloc(pool.emu, 4 * kMiB);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 4 * kMiB);
  const size_t regions_before = list_regions(*pool.admin).size();
  ASSERT_EQ(regions_before, 1u);

  cxlpool_region* denied = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client.get(), pool.emu, 8 * kMiB, 0, &denied), -EDQUOT);
  EXPECT_EQ(denied, nullptr);
  EXPECT_NE(std::string(cxlpool_last_error()).find("quota"), std::string::npos) << cxlpool_last_error();
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 4 * kMiB);
  EXPECT_EQ(list_regions(*pool.admin).size(), regions_before);
  EXPECT_EQ(stat(*pool.admin, "pool.quota_rejections"), 1u);

  // Up to the limit exactly is allowed; one page more is not.
  cxlpool::Region second = client.alloc(pool.emu, 4 * kMiB);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 8 * kMiB);
  EXPECT_EQ(try_alloc(client, pool.emu, 4096), -EDQUOT);
  // The quota is per tier: DRAM has its own 8 MiB.
  EXPECT_EQ(try_alloc(client, tier_named(*pool.admin, "dram0").id, 8 * kMiB), 0);

  first.free();
  second.free();
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 0u);
  cxlpool::Region fresh = client.alloc(pool.emu, 8 * kMiB);
  EXPECT_EQ(fresh.size(), 8 * kMiB);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 8 * kMiB);
}

TEST(Quota, PerUserRulesOverrideTheDefault) {
  const std::string uid = std::to_string(::getuid());
  // For this uid: 16 MiB on emu (tier rule), 4 MiB on every other tier
  // ("*" rule), both overriding the 8 MiB default.
  TestConfig config;
  config.tables = quota_tables("\"8M\"") +
                  "\n[[quota.user]]\nuid = " + uid + "\ntier = \"emu\"\nbytes = \"16M\"\n"
                  "\n[[quota.user]]\nuid = " + uid + "\ntier = \"*\"\nbytes = \"4M\"\n";
  RunningPool pool(config);
  ASSERT_TRUE(pool.start());
  const uint32_t dram = tier_named(*pool.admin, "dram0").id;
  Client client(pool.daemon.socket(), "quota-rules");

  cxlpool::Region big = client.alloc(pool.emu, 12 * kMiB);
  EXPECT_EQ(try_alloc(client, pool.emu, 8 * kMiB), -EDQUOT);
  cxlpool::Region rest = client.alloc(pool.emu, 4 * kMiB);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 16 * kMiB);
  EXPECT_EQ(try_alloc(client, pool.emu, 4096), -EDQUOT);

  EXPECT_EQ(try_alloc(client, dram, 8 * kMiB), -EDQUOT);
  cxlpool::Region dram_region = client.alloc(dram, 4 * kMiB);
  EXPECT_EQ(try_alloc(client, dram, 4096), -EDQUOT);
  EXPECT_EQ(tier_used(*pool.admin, "dram0"), 4 * kMiB);
}

TEST(Reload, SighupAppliesANewQuotaAndKeepsTheOldOneOnAnInvalidFile) {
  RunningPool pool(TestConfig{.tables = quota_tables("\"8M\"")});
  ASSERT_TRUE(pool.start());
  Client client(pool.daemon.socket(), "reload");

  cxlpool::Region first = client.alloc(pool.emu, 8 * kMiB);
  EXPECT_EQ(try_alloc(client, pool.emu, 4 * kMiB), -EDQUOT);
  ASSERT_EQ(stat(*pool.admin, "daemon.reloads"), 0u);

  pool.daemon.write_config(TestConfig{.tables = quota_tables("\"16M\"")}.render());
  pool.daemon.send_signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return stat(*pool.admin, "daemon.reloads") == 1; }, 5s));
  cxlpool::Region second = client.alloc(pool.emu, 4 * kMiB);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 12 * kMiB);

  pool.daemon.write_config(TestConfig{.tables = quota_tables("\"sixteen megabytes\"")}.render());
  pool.daemon.send_signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return stat(*pool.admin, "daemon.reloads") == 2; }, 5s));
  EXPECT_TRUE(pool.daemon.running());
  // Still the 16 MiB quota: neither the bad file nor the defaults apply.
  cxlpool::Region third = client.alloc(pool.emu, 4 * kMiB);
  EXPECT_EQ(try_alloc(client, pool.emu, 4096), -EDQUOT);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 16 * kMiB);
  EXPECT_NE(pool.daemon.log().find("reload failed"), std::string::npos);
}

}  // namespace
}  // namespace cxlpool::integration
