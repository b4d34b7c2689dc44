// SPDX-License-Identifier: Apache-2.0
// EmbeddedPodState: records come back as they were put, by id, and ids are
// never handed out twice.
#include <gtest/gtest.h>

#include "cxlpool/devpool/pod_state.hpp"

namespace cxlpool::devpool {
namespace {

TEST(PodState, DevicesRoundTripAndListById) {
  EmbeddedPodState s;
  Device a;
  a.id = s.next_id();
  a.spec = {DeviceKind::kNet, "eth0", "h1", 10'000'000'000, 0, 0, {2, 0, 0, 0, 0, 1}};
  Device b = a;
  b.id = s.next_id();
  b.spec.name = "eth1";
  s.put_device(b);
  s.put_device(a);
  ASSERT_EQ(s.devices().size(), 2u);
  EXPECT_EQ(s.devices()[0], a);
  EXPECT_EQ(s.devices()[1], b);
  EXPECT_EQ(s.device(b.id), b);
  b.health = DeviceHealth::kLinkDown;
  s.put_device(b);
  EXPECT_EQ(s.device(b.id)->health, DeviceHealth::kLinkDown);
  s.erase_device(a.id);
  EXPECT_FALSE(s.device(a.id).has_value());
  EXPECT_EQ(s.devices().size(), 1u);
}

TEST(PodState, AttachmentsHostsLeases) {
  EmbeddedPodState s;
  Attachment at;
  at.id = s.next_id();
  at.host = "h2";
  at.legs[0] = {7, 0};
  at.legs[1] = {8, 1};
  s.put_attachment(at);
  EXPECT_EQ(s.attachment(at.id), at);
  EXPECT_EQ(s.attachment(at.id)->primary().device, 7u);
  EXPECT_EQ(s.attachment(at.id)->backup().device, 8u);
  s.erase_attachment(at.id);
  EXPECT_TRUE(s.attachments().empty());

  s.put_host({"b", 2});
  s.put_host({"a", 1});
  ASSERT_EQ(s.hosts().size(), 2u);
  EXPECT_EQ(s.hosts()[0].name, "a");

  s.put_lease({3, 100});
  s.put_lease({3, 200});
  EXPECT_EQ(s.lease(3)->expires_ns, 200u);
  EXPECT_EQ(s.leases().size(), 1u);
  s.erase_lease(3);
  EXPECT_FALSE(s.lease(3).has_value());
}

TEST(PodState, IdsAreFreshAndNonZero) {
  EmbeddedPodState s;
  const uint32_t a = s.next_id();
  const uint32_t b = s.next_id();
  EXPECT_NE(a, kNoDevice);
  EXPECT_NE(a, b);
}

TEST(PodState, KindAndHealthNames) {
  EXPECT_STREQ(device_kind_name(DeviceKind::kNet), "net");
  EXPECT_STREQ(device_kind_name(DeviceKind::kBlk), "blk");
  EXPECT_STREQ(device_health_name(DeviceHealth::kLinkDown), "link-down");
  EXPECT_STREQ(device_health_name(static_cast<DeviceHealth>(9)), "unknown");
}

}  // namespace
}  // namespace cxlpool::devpool
