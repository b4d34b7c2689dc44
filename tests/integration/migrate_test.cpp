// SPDX-License-Identifier: Apache-2.0
// Admin migration of a region between tiers, through the library and
// cxlpoolctl: page counts, accounting, contents, errors.
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"

namespace cxlpool::integration {
namespace {

using nlohmann::json;

constexpr uint64_t kRegionSize = 8 * kMiB;
constexpr uint64_t kPages = kRegionSize / 4096;

void fill(uint32_t* words, size_t count) {
  for (size_t i = 0; i < count; ++i) words[i] = static_cast<uint32_t>(i * 2654435761u);
}

size_t mismatches(const uint32_t* words, size_t count) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += words[i] != static_cast<uint32_t>(i * 2654435761u);
  return bad;
}

void expect_complete(const cxlpool_migrate_result& r, bool same_node) {
  EXPECT_EQ(r.pages_total, kPages);
  EXPECT_EQ(r.pages_moved + r.pages_already, kPages);
  EXPECT_EQ(r.pages_absent, 0u);
  EXPECT_EQ(r.pages_failed, 0u);
  EXPECT_EQ(r.bytes_moved, r.pages_moved * 4096);
  // Both tiers on one node: every page is already where it should be.
  if (same_node) {
    EXPECT_EQ(r.pages_already, kPages);
  }
}

TEST(Migrate, RegionMovesBetweenTiersWithExactAccounting) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  const auto dram = tier_named(*admin, "dram0");
  const auto emu = tier_named(*admin, kEmuTier);
  const bool same_node = dram.numa_node == emu.numa_node;

  Client client(daemon.socket(), "migrant");
  cxlpool::Region region = client.alloc(dram.id, kRegionSize, CXLPOOL_ALLOC_POPULATE);
  auto* words = region.data<uint32_t>();
  fill(words, kRegionSize / 4);
  EXPECT_EQ(tier_used(*admin, "dram0"), kRegionSize);
  EXPECT_EQ(tier_used(*admin, kEmuTier), 0u);

  cxlpool_migrate_result there{};
  ASSERT_EQ(cxlpool_region_migrate(client.get(), region.id(), emu.id, &there), 0) << cxlpool_last_error();
  expect_complete(there, same_node);
  EXPECT_EQ(tier_used(*admin, "dram0"), 0u);
  EXPECT_EQ(tier_used(*admin, kEmuTier), kRegionSize);
  auto regions = list_regions(*admin);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].tier_id, emu.id);
  EXPECT_EQ(mismatches(words, kRegionSize / 4), 0u);

  cxlpool_migrate_result back{};
  ASSERT_EQ(cxlpool_region_migrate(client.get(), region.id(), dram.id, &back), 0) << cxlpool_last_error();
  expect_complete(back, same_node);
  EXPECT_EQ(tier_used(*admin, "dram0"), kRegionSize);
  EXPECT_EQ(tier_used(*admin, kEmuTier), 0u);
  EXPECT_EQ(mismatches(words, kRegionSize / 4), 0u);
  EXPECT_EQ(stat(*admin, "pool.migrations"), 2u);

  // To where it is already: nothing to do, nothing charged twice.
  cxlpool_migrate_result stay{};
  ASSERT_EQ(cxlpool_region_migrate(client.get(), region.id(), dram.id, &stay), 0);
  EXPECT_EQ(stay.pages_already, kPages);
  EXPECT_EQ(stay.pages_moved, 0u);
  EXPECT_EQ(tier_used(*admin, "dram0"), kRegionSize);

  EXPECT_EQ(cxlpool_region_migrate(client.get(), region.id(), 99, &stay), -ENOENT);
  EXPECT_EQ(cxlpool_region_migrate(client.get(), region.id() + 1000, emu.id, &stay), -ENOENT);
  EXPECT_EQ(tier_used(*admin, "dram0"), kRegionSize);
  EXPECT_EQ(tier_used(*admin, kEmuTier), 0u);

  // The same through cxlpoolctl, by tier name.
  auto ctl = run_program({ctl_binary(), "--socket", daemon.socket(), "--json", "region", "migrate",
                          std::to_string(region.id()), kEmuTier});
  ASSERT_EQ(ctl.exit_code, 0) << ctl.err;
  const json out = json::parse(ctl.out);
  EXPECT_EQ(out.at("region").get<uint64_t>(), region.id());
  EXPECT_EQ(out.at("from_tier").get<uint32_t>(), dram.id);
  EXPECT_EQ(out.at("to_tier").get<uint32_t>(), emu.id);
  EXPECT_EQ(out.at("pages_total").get<uint64_t>(), kPages);
  EXPECT_EQ(out.at("pages_moved").get<uint64_t>() + out.at("pages_already").get<uint64_t>(), kPages);
  EXPECT_EQ(out.at("pages_failed").get<uint64_t>(), 0u);
  EXPECT_TRUE(out.contains("elapsed_ns"));
  EXPECT_EQ(tier_used(*admin, kEmuTier), kRegionSize);
  EXPECT_EQ(tier_used(*admin, "dram0"), 0u);

  auto no_tier = run_program({ctl_binary(), "--socket", daemon.socket(), "region", "migrate",
                              std::to_string(region.id()), "nowhere"});
  EXPECT_EQ(no_tier.exit_code, 1) << no_tier.err;
  auto no_region = run_program({ctl_binary(), "--socket", daemon.socket(), "region", "migrate", "999999", "dram0"});
  EXPECT_EQ(no_region.exit_code, 1) << no_region.err;
  EXPECT_EQ(mismatches(words, kRegionSize / 4), 0u);
}

TEST(Migrate, TargetTierQuotaApplies) {
  TestConfig config;
  config.tables = "[[quota.user]]\nuid = " + std::to_string(::getuid()) + "\ntier = \"emu\"\nbytes = \"4M\"\n";
  DaemonProcess daemon(config.render());
  ASSERT_TRUE(daemon.start());
  auto admin = connect_admin(daemon.socket());
  ASSERT_TRUE(admin);
  const auto emu = tier_named(*admin, kEmuTier);
  Client client(daemon.socket(), "over-quota");
  cxlpool::Region region = client.alloc(tier_named(*admin, "dram0").id, kRegionSize, CXLPOOL_ALLOC_POPULATE);
  cxlpool_migrate_result result{};
  EXPECT_EQ(cxlpool_region_migrate(client.get(), region.id(), emu.id, &result), -EDQUOT);
  EXPECT_EQ(tier_used(*admin, "dram0"), kRegionSize);
  EXPECT_EQ(tier_used(*admin, kEmuTier), 0u);
  EXPECT_EQ(list_regions(*admin).at(0).tier_id, tier_named(*admin, "dram0").id);
}

}  // namespace
}  // namespace cxlpool::integration
