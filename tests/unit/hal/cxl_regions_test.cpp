// SPDX-License-Identifier: Apache-2.0
// Discovery through libcxl/libdaxctl must agree with what sysfs shows. On a
// host without CXL both are empty; the vm suite's CXL guest has memdevs.
#include "cxl_regions.hpp"

#include <filesystem>

#include <gtest/gtest.h>

namespace cxlpool::drivers {
namespace {

size_t count_entries(const std::string& dir, const std::string& prefix) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

TEST(CxlDiscovery, MatchesSysfs) {
  auto inventory = discover_cxl();
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->memdevs.size(), count_entries("/sys/bus/cxl/devices", "mem"));
  EXPECT_EQ(inventory->regions.size(), count_entries("/sys/bus/cxl/devices", "region"));
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
  EXPECT_EQ(devices->size(), count_entries("/sys/bus/dax/devices", "dax"));
  for (const auto& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.region_path.empty()) << d.name;
  }
}

}  // namespace
}  // namespace cxlpool::drivers
