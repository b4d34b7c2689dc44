// SPDX-License-Identifier: Apache-2.0
// Load telemetry: utilization relative to a device's capacity, the short
// history and the EWMA the allocator balances on.
#include <gtest/gtest.h>

#include "cxlpool/devpool/device_load.hpp"

namespace cxlpool::devpool {
namespace {

DeviceSpec nic(uint64_t bps) { return {DeviceKind::kNet, "eth0", "h", bps, 0, 0, {}}; }

TEST(DeviceLoad, NetUtilizationIsBitsOverLinkSpeed) {
  EXPECT_DOUBLE_EQ(utilization(nic(8'000'000'000), {0, 500'000'000, 0, true}), 0.5);
  EXPECT_DOUBLE_EQ(utilization(nic(0), {0, 500'000'000, 0, true}), 0.0);
}

TEST(DeviceLoad, BlkUtilizationIsTheLargerOfBandwidthAndIops) {
  DeviceSpec ssd{DeviceKind::kBlk, "nvme0n1", "h", 1ull << 40, 100'000, 1'000'000'000, {}};
  EXPECT_DOUBLE_EQ(utilization(ssd, {0, 250'000'000, 10'000, true}), 0.25);
  EXPECT_DOUBLE_EQ(utilization(ssd, {0, 100'000'000, 50'000, true}), 0.5);
}

TEST(DeviceLoad, EwmaStartsAtTheFirstSampleAndFollows) {
  const DeviceSpec spec = nic(8'000);
  DeviceLoad load;
  load.add(spec, {100, 1000, 0, true});  // 1.0
  EXPECT_DOUBLE_EQ(load.ewma(), 1.0);
  load.add(spec, {200, 0, 0, true});  // 0.0
  EXPECT_DOUBLE_EQ(load.ewma(), 1.0 - DeviceLoad::kAlpha);
  EXPECT_EQ(load.samples(), 2u);
  EXPECT_EQ(load.recent(0).at_ns, 200u);
  EXPECT_EQ(load.recent(1).at_ns, 100u);
  EXPECT_DOUBLE_EQ(load.recent_utilization(1), 1.0);
}

TEST(DeviceLoad, HistoryKeepsTheLastSamples) {
  const DeviceSpec spec = nic(8'000);
  DeviceLoad load;
  for (uint64_t i = 0; i < DeviceLoad::kHistory + 5; ++i) load.add(spec, {i, 0, 0, true});
  EXPECT_EQ(load.samples(), DeviceLoad::kHistory);
  EXPECT_EQ(load.total_samples(), DeviceLoad::kHistory + 5);
  EXPECT_EQ(load.recent(0).at_ns, DeviceLoad::kHistory + 4);
  EXPECT_EQ(load.recent(DeviceLoad::kHistory - 1).at_ns, 5u);
}

}  // namespace
}  // namespace cxlpool::devpool
