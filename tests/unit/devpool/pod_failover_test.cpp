// SPDX-License-Identifier: Apache-2.0
// Failover decisions: a device lost (session closed, lease expired, link
// down) switches its attachments to their backups and finds new backups;
// attachments with nothing left wait stranded until a device joins; the
// admin drain moves primaries to their backups.
#include <gtest/gtest.h>

#include <algorithm>

#include "pod_test_util.hpp"

namespace cxlpool::devpool {
namespace {

using test::kMs;
using test::Pod;

bool has(const std::vector<uint32_t>& v, uint32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(PodFailover, LostPrimarySwitchesToBackupAndGetsANewBackup) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  const uint32_t c = pod.add_nic("eth1", "h2");
  auto at = pod.attach("h3").attachment;
  ASSERT_EQ(at.primary().device, a);
  ASSERT_EQ(at.backup().device, b);

  auto report = pod.allocator.deregister_device(a, pod.now);
  ASSERT_EQ(report.events.size(), 1u);
  const FailoverEvent& e = report.events[0];
  EXPECT_EQ(e.action, FailoverAction::kSwitched);
  EXPECT_EQ(e.from_device, a);
  EXPECT_EQ(e.to_device, b);
  EXPECT_EQ(e.new_backup, c);
  const Attachment now = pod.get(at.id);
  EXPECT_EQ(now.primary().device, b);
  EXPECT_EQ(now.backup().device, c);
  EXPECT_EQ(now.generation, at.generation + 1);
  // The lost leg keeps its slot, which now links to c and must be formatted again.
  EXPECT_EQ(now.backup().slot, at.primary().slot);
  EXPECT_TRUE(has(report.slots_to_format, at.primary().slot));
  ASSERT_EQ(report.changed.size(), 1u);
  EXPECT_EQ(report.changed[0], now);
  EXPECT_FALSE(pod.state.device(a).has_value());
}

TEST(PodFailover, LostBackupIsReplacedOrReportedLost) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  const uint32_t c = pod.add_nic("eth1", "h2");
  auto at = pod.attach("h3").attachment;
  ASSERT_EQ(at.backup().device, b);
  auto report = pod.allocator.deregister_device(b, pod.now);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_EQ(report.events[0].action, FailoverAction::kBackupReplaced);
  EXPECT_EQ(pod.get(at.id).primary().device, a);
  EXPECT_EQ(pod.get(at.id).backup().device, c);
  report = pod.allocator.deregister_device(c, pod.now);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_EQ(report.events[0].action, FailoverAction::kBackupLost);
  EXPECT_EQ(pod.get(at.id).backup().device, kNoDevice);
  EXPECT_TRUE(report.slots_to_format.empty());
}

TEST(PodFailover, WithoutBackupANewPrimaryOrStranded) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  auto at = pod.attach("h3").attachment;
  ASSERT_EQ(at.backup().device, kNoDevice);
  auto report = pod.allocator.deregister_device(a, pod.now);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_EQ(report.events[0].action, FailoverAction::kStranded);
  EXPECT_EQ(pod.get(at.id).primary().device, kNoDevice);

  // A device that joins later picks up the stranded attachment (and a
  // second one becomes its backup).
  auto joined = pod.allocator.register_device({DeviceKind::kNet, "eth5", "h4", test::k10G, 0, 0, {}}, 1, pod.now);
  ASSERT_EQ(joined.repaired.events.size(), 1u);
  EXPECT_EQ(joined.repaired.events[0].action, FailoverAction::kReassigned);
  EXPECT_EQ(pod.get(at.id).primary().device, joined.device);
  const uint32_t second = pod.add_nic("eth6", "h5");
  EXPECT_EQ(pod.get(at.id).backup().device, second);
}

TEST(PodFailover, LinkDownFailsANicOverAndLinkUpBringsItBack) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  auto at = pod.attach("h3").attachment;
  auto down = pod.beat(a, 0.0, false);
  EXPECT_TRUE(down.health_changed);
  EXPECT_EQ(pod.state.device(a)->health, DeviceHealth::kLinkDown);
  ASSERT_EQ(down.failover.events.size(), 1u);
  EXPECT_EQ(pod.get(at.id).primary().device, b);
  EXPECT_EQ(pod.get(at.id).backup().device, kNoDevice);  // a is down and nothing else is free
  // Still down: nothing more happens.
  EXPECT_TRUE(pod.beat(a, 0.0, false).failover.empty());
  auto up = pod.beat(a);
  EXPECT_TRUE(up.health_changed);
  EXPECT_EQ(pod.state.device(a)->health, DeviceHealth::kHealthy);
  // Back as the backup; traffic does not move back by itself.
  EXPECT_EQ(pod.get(at.id).primary().device, b);
  EXPECT_EQ(pod.get(at.id).backup().device, a);
}

TEST(PodFailover, SsdLinkStateIsIgnored) {
  Pod pod;
  const uint32_t s = pod.add_ssd("nvme0", "h1");
  auto out = pod.allocator.heartbeat(s, {0, 0, 0, false}, pod.now);
  EXPECT_FALSE(out.health_changed);
  EXPECT_EQ(pod.state.device(s)->health, DeviceHealth::kHealthy);
}

TEST(PodFailover, LeaseExpiryFailsOverHungBackends) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  auto at = pod.attach("h3").attachment;
  // b keeps beating, a hangs.
  for (int i = 0; i < 15; ++i) {
    pod.now += 100 * kMs;
    pod.beat(b);
  }
  auto report = pod.allocator.expire(pod.now);
  ASSERT_EQ(report.failed_devices.size(), 1u);
  EXPECT_EQ(report.failed_devices[0], a);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_EQ(pod.get(at.id).primary().device, b);
  // A dead device is listed until its session goes.
  EXPECT_EQ(pod.state.device(a)->health, DeviceHealth::kDead);
  EXPECT_TRUE(pod.allocator.deregister_device(a, pod.now).events.empty());
}

TEST(PodFailover, DrainMovesPrimariesToTheirBackups) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  auto on_a = pod.attach("h3").attachment;
  auto on_b = pod.attach("h3").attachment;
  ASSERT_EQ(on_a.primary().device, a);
  ASSERT_EQ(on_b.primary().device, b);
  auto report = pod.allocator.drain(a, pod.now);
  ASSERT_TRUE(report.has_value());
  ASSERT_EQ(report->events.size(), 1u);
  EXPECT_EQ(report->events[0].attachment, on_a.id);
  EXPECT_TRUE(report->slots_to_format.empty());
  const Attachment moved = pod.get(on_a.id);
  EXPECT_EQ(moved.primary().device, b);
  EXPECT_EQ(moved.backup().device, a);
  EXPECT_EQ(moved.generation, on_a.generation + 1);
  EXPECT_EQ(pod.get(on_b.id), on_b);
  EXPECT_FALSE(pod.allocator.drain(777, pod.now).has_value());
}

TEST(PodFailover, DrainLeavesAttachmentsWithoutBackup) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  auto at = pod.attach("h3").attachment;
  auto report = pod.allocator.drain(a, pod.now);
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->events.empty());
  EXPECT_EQ(pod.get(at.id), at);
}

TEST(PodFailover, ManyAttachmentsSpreadTheirNewBackups) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  pod.add_nic("eth0", "h2");
  pod.add_nic("eth0", "h3");
  pod.add_nic("eth0", "h4");
  std::vector<uint32_t> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(pod.attach("h9").attachment.id);
  auto report = pod.allocator.deregister_device(a, pod.now);
  for (uint32_t id : ids) {
    const Attachment x = pod.get(id);
    EXPECT_NE(x.primary().device, a);
    EXPECT_NE(x.primary().device, kNoDevice);
    EXPECT_NE(x.backup().device, x.primary().device);
    EXPECT_NE(x.backup().device, kNoDevice);
  }
  EXPECT_FALSE(report.events.empty());
}

TEST(PodFailover, ActionNames) {
  EXPECT_STREQ(failover_action_name(FailoverAction::kSwitched), "switched");
  EXPECT_STREQ(failover_action_name(FailoverAction::kStranded), "stranded");
}

// A shared state: another daemon's device vanished from the pod (its host
// died), so this allocator never saw it deregistered; what it last knew of
// the device is enough to fail its legs over.
TEST(PodFailover, DeviceGoneFromTheStateFailsItsLegsOver) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  const uint32_t c = pod.add_nic("eth1", "h2");
  auto at = pod.attach("h3").attachment;
  ASSERT_EQ(at.primary().device, a);
  const Device last = *pod.state.device(a);
  pod.state.erase_device(a);  // the store dropped it
  auto report = pod.allocator.device_gone(last);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_EQ(report.events[0].action, FailoverAction::kSwitched);
  EXPECT_EQ(pod.get(at.id).primary().device, b);
  EXPECT_EQ(pod.get(at.id).backup().device, c);
  // Once nothing uses it, it is gone for good: a second call changes nothing.
  EXPECT_TRUE(pod.allocator.device_gone(last).events.empty());
}

TEST(PodFailover, StorageOfAnUnknownGoneDeviceGetsNoOtherSsdAsBackup) {
  Pod pod;
  const uint32_t a = pod.add_ssd("ssd0", "h1");
  const uint32_t b = pod.add_ssd("ssd0", "h2");
  pod.add_ssd("ssd1", "h2");
  auto at = pod.attach("h3", DeviceKind::kBlk).attachment;
  ASSERT_EQ(at.primary().device, a);
  ASSERT_EQ(at.backup().device, b);
  // Gone without a record (never seen here): a name no device has.
  Device unknown;
  unknown.id = b;
  unknown.spec.kind = DeviceKind::kBlk;
  unknown.spec.name = "?";
  pod.state.erase_device(b);
  auto report = pod.allocator.device_gone(unknown);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_EQ(report.events[0].action, FailoverAction::kBackupLost);
  EXPECT_EQ(pod.get(at.id).backup().device, kNoDevice);
}

}  // namespace
}  // namespace cxlpool::devpool
