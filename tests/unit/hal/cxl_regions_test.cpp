// SPDX-License-Identifier: Apache-2.0
// Discovery through libcxl/libdaxctl must agree with what sysfs shows. On a
// host without CXL both are empty; the vm suite's CXL guest has memdevs.
#include "cxl_regions.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "support/dir_entries.hpp"

namespace cxlpool::drivers {
namespace {

using test::count_dir_entries;

TEST(CxlDiscovery, MatchesSysfs) {
  auto inventory = discover_cxl();
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->memdevs.size(), count_dir_entries("/sys/bus/cxl/devices", "mem"));
  EXPECT_EQ(inventory->regions.size(), count_dir_entries("/sys/bus/cxl/devices", "region"));
  for (const auto& m : inventory->memdevs) {
    EXPECT_EQ(m.name.rfind("mem", 0), 0u) << m.name;
    EXPECT_TRUE(std::filesystem::exists("/sys/bus/cxl/devices/" + m.name)) << m.name;
  }
  for (const auto& r : inventory->regions) {
    EXPECT_TRUE(std::filesystem::exists("/sys/bus/cxl/devices/" + r.name)) << r.name;
    for (const auto& m : r.memdevs) EXPECT_FALSE(m.name.empty()) << r.name;
  }
  auto regions = discover_cxl_regions();
  ASSERT_TRUE(regions.has_value()) << regions.error().message;
  EXPECT_EQ(regions->size(), inventory->regions.size());
}

TEST(CxlDiscovery, DaxDevicesMatchSysfs) {
  auto devices = discover_dax_devices();
  ASSERT_TRUE(devices.has_value()) << devices.error().message;
  EXPECT_EQ(devices->size(), count_dir_entries("/sys/bus/dax/devices", "dax"));
  for (const auto& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.region_path.empty()) << d.name;
  }
}

}  // namespace
}  // namespace cxlpool::drivers
