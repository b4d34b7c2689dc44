// SPDX-License-Identifier: Apache-2.0
// The allocator's decisions at registration and attach: names, limits,
// least load relative to capacity, preferred devices, backups on another
// device and preferably another host, leases on an injected clock.
#include <gtest/gtest.h>

#include "pod_test_util.hpp"

namespace cxlpool::devpool {
namespace {

using test::k10G;
using test::kMs;
using test::Pod;

TEST(PodAllocator, RegistersDevicesWithLinesAndLeases) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");  // same name, other host
  ASSERT_NE(a, kNoDevice);
  ASSERT_NE(b, kNoDevice);
  EXPECT_NE(pod.state.device(a)->line, pod.state.device(b)->line);
  EXPECT_EQ(pod.allocator.lease_expiry(a), pod.now + pod.allocator.config().lease_ns);
  ASSERT_EQ(pod.state.hosts().size(), 2u);
  auto again = pod.allocator.register_device({DeviceKind::kNet, "eth0", "h1", k10G, 0, 0, {}}, 5, pod.now);
  EXPECT_EQ(again.status, RegisterStatus::kNameTaken);
}

TEST(PodAllocator, RegistryIsBounded) {
  AllocatorConfig config;
  config.max_devices = 2;
  Pod pod(config);
  EXPECT_NE(pod.add_nic("a", "h"), kNoDevice);
  EXPECT_NE(pod.add_nic("b", "h"), kNoDevice);
  auto third = pod.allocator.register_device({DeviceKind::kNet, "c", "h", k10G, 0, 0, {}}, 1, pod.now);
  EXPECT_EQ(third.status, RegisterStatus::kFull);
}

TEST(PodAllocator, AttachWithoutDevicesIsAnOutcome) {
  Pod pod;
  EXPECT_EQ(pod.attach("h1").status, AttachStatus::kNoDevice);
  pod.add_ssd("nvme0", "h1");
  EXPECT_EQ(pod.attach("h1", DeviceKind::kNet).status, AttachStatus::kNoDevice);
  EXPECT_EQ(pod.attach("h1", DeviceKind::kBlk).status, AttachStatus::kAttached);
}

TEST(PodAllocator, SingleDeviceHasNoBackup) {
  Pod pod;
  const uint32_t only = pod.add_nic("eth0", "h1");
  auto out = pod.attach("h2");
  ASSERT_EQ(out.status, AttachStatus::kAttached);
  EXPECT_EQ(out.attachment.primary().device, only);
  EXPECT_EQ(out.attachment.backup().device, kNoDevice);
  EXPECT_EQ(out.attachment.generation, 1u);
}

TEST(PodAllocator, BackupIsAnotherDevicePreferablyOnAnotherHost) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  pod.add_nic("eth1", "h1");  // same host as a: the backup avoids it
  const uint32_t c = pod.add_nic("eth0", "h2", k10G / 10);  // smaller, busier relative to capacity, other host
  auto out = pod.attach("h3");
  ASSERT_EQ(out.status, AttachStatus::kAttached);
  EXPECT_EQ(out.attachment.primary().device, a);
  EXPECT_EQ(out.attachment.backup().device, c);
}

TEST(PodAllocator, LinksGetTwoSlotsPerAttachmentLine) {
  Pod pod;
  pod.add_nic("eth0", "h1");
  pod.add_nic("eth0", "h2");
  auto first = pod.attach("h3");
  auto second = pod.attach("h3");
  EXPECT_EQ(first.attachment.legs[0].slot, 2 * first.attachment.line);
  EXPECT_EQ(first.attachment.legs[1].slot, 2 * first.attachment.line + 1);
  EXPECT_NE(first.attachment.line, second.attachment.line);
  EXPECT_TRUE(pod.allocator.detach(first.attachment.id));
  EXPECT_FALSE(pod.allocator.detach(first.attachment.id));
  // The freed line (and its slots) is taken again.
  EXPECT_EQ(pod.attach("h3").attachment.line, first.attachment.line);
}

TEST(PodAllocator, AttachmentsAreBounded) {
  AllocatorConfig config;
  config.max_attachments = 1;
  Pod pod(config);
  pod.add_nic("eth0", "h1");
  EXPECT_EQ(pod.allocator.link_slots(), 2u);
  EXPECT_EQ(pod.attach("h").status, AttachStatus::kAttached);
  EXPECT_EQ(pod.attach("h").status, AttachStatus::kFull);
}

TEST(PodAllocator, BurstOfAttachmentsSpreadsOverDevices) {
  Pod pod;
  const uint32_t a = pod.add_nic("eth0", "h1");
  const uint32_t b = pod.add_nic("eth0", "h2");
  int on_a = 0;
  for (int i = 0; i < 6; ++i) {
    auto out = pod.attach("h3");
    ASSERT_EQ(out.status, AttachStatus::kAttached);
    on_a += out.attachment.primary().device == a ? 1 : 0;
    EXPECT_NE(out.attachment.backup().device, out.attachment.primary().device);
    EXPECT_TRUE(out.attachment.backup().device == a || out.attachment.backup().device == b);
  }
  EXPECT_EQ(on_a, 3);
}

TEST(PodAllocator, LeastLoadRelativeToCapacityFromTelemetry) {
  Pod pod;
  const uint32_t busy = pod.add_nic("eth0", "h1");
  const uint32_t idle = pod.add_nic("eth0", "h2");
  for (int i = 0; i < 10; ++i) {
    pod.now += 100 * kMs;
    pod.beat(busy, 0.8);
    pod.beat(idle, 0.1);
  }
  EXPECT_GT(pod.allocator.load(busy)->ewma(), 0.7);
  EXPECT_LT(pod.allocator.load(idle)->ewma(), 0.2);
  auto out = pod.attach("h3");
  EXPECT_EQ(out.attachment.primary().device, idle);
  EXPECT_EQ(out.attachment.backup().device, busy);
}

TEST(PodAllocator, CapacityWeighsTheNominalLoad) {
  Pod pod;
  const uint32_t big = pod.add_nic("eth0", "h1", 4 * k10G);
  const uint32_t small = pod.add_nic("eth0", "h2", k10G);
  int on_big = 0;
  for (int i = 0; i < 5; ++i) on_big += pod.attach("h3").attachment.primary().device == big ? 1 : 0;
  // 40G takes four attachments for each one a 10G link takes.
  EXPECT_EQ(on_big, 4);
  EXPECT_GT(pod.allocator.score(*pod.state.device(small)), 0.0);
}

TEST(PodAllocator, LoadReachesTheStateRateLimited) {
  Pod pod;
  const uint32_t d = pod.add_nic("eth0", "h1");
  EXPECT_EQ(pod.state.device(d)->load, PublishedLoad{});
  // The first sample is written at once.
  pod.now += 100 * kMs;
  EXPECT_TRUE(pod.beat(d, 0.5).load_published);
  PublishedLoad first = pod.state.device(d)->load;
  EXPECT_EQ(first.utilization_ppm, 500'000u);
  EXPECT_EQ(first.bytes_per_s, 625'000'000u);
  EXPECT_EQ(first.samples, 1u);
  // A steady load: no write at all, however long it lasts.
  int writes = 0;
  for (int i = 0; i < 50; ++i) {
    pod.now += 100 * kMs;
    writes += pod.beat(d, 0.5).load_published ? 1 : 0;
  }
  EXPECT_EQ(writes, 0);
  // A load that drifts by a few points: at most one write a second.
  writes = 0;
  for (int i = 0; i < 50; ++i) {
    pod.now += 100 * kMs;
    writes += pod.beat(d, 0.5 + 0.01 * (i % 5)).load_published ? 1 : 0;
  }
  EXPECT_GE(writes, 1);
  EXPECT_LE(writes, 5);
  // A jump of more than ten points is written within load_publish_min_ns,
  // never sooner, however often it moves.
  pod.now += 1000 * kMs;
  EXPECT_TRUE(pod.beat(d, 0.0).load_published);
  const uint64_t last = pod.now;
  pod.now += 100 * kMs;
  EXPECT_FALSE(pod.beat(d, 1.0).load_published);
  pod.now += 100 * kMs;
  EXPECT_FALSE(pod.beat(d, 1.0).load_published);
  pod.now += 100 * kMs;
  ASSERT_GE(pod.now - last, pod.allocator.config().load_publish_min_ns);
  EXPECT_TRUE(pod.beat(d, 1.0).load_published);
  EXPECT_GT(pod.state.device(d)->load.utilization_ppm, 500'000u);
  // The same heartbeat decided again (a shared state's conflict) takes its
  // sample once and writes the same figures.
  const PublishedLoad written = pod.state.device(d)->load;
  const uint64_t samples = pod.allocator.load(d)->total_samples();
  EXPECT_TRUE(pod.beat(d, 1.0).load_published);
  EXPECT_EQ(pod.allocator.load(d)->total_samples(), samples);
  EXPECT_EQ(pod.state.device(d)->load, written);
}

TEST(PodAllocator, LoadPublishingCanBeOff) {
  AllocatorConfig config;
  config.load_publish_ns = 0;
  Pod pod(config);
  const uint32_t d = pod.add_nic("eth0", "h1");
  pod.now += 100 * kMs;
  EXPECT_FALSE(pod.beat(d, 0.5).load_published);
  EXPECT_EQ(pod.state.device(d)->load, PublishedLoad{});
}

TEST(PodAllocator, ADeviceWithoutLocalTelemetryRanksByItsRecordsLoad) {
  // Two NICs another daemon serves: this allocator never heard a heartbeat
  // of theirs, only the load their daemon wrote to the shared state.
  Pod pod;
  const uint32_t busy = pod.add_nic("eth0", "h1");
  const uint32_t idle = pod.add_nic("eth0", "h2");
  Device d = *pod.state.device(busy);
  d.load = {800'000, 1'000'000'000, 0, 40};
  pod.state.put_device(d);
  d = *pod.state.device(idle);
  d.load = {100'000, 125'000'000, 0, 40};
  pod.state.put_device(d);
  ASSERT_EQ(pod.allocator.load(busy), nullptr);
  EXPECT_DOUBLE_EQ(pod.allocator.score(*pod.state.device(busy)), 0.8);
  auto out = pod.attach("h3");
  EXPECT_EQ(out.attachment.primary().device, idle);
  EXPECT_EQ(out.attachment.backup().device, busy);
}

TEST(PodAllocator, PreferredDeviceWhenHealthy) {
  Pod pod;
  pod.add_nic("eth0", "h1");
  const uint32_t wanted = pod.add_nic("eth9", "h2");
  for (int i = 0; i < 3; ++i) {
    auto out = pod.attach("h3", DeviceKind::kNet, "eth9");
    EXPECT_TRUE(out.preferred_used);
    EXPECT_EQ(out.attachment.primary().device, wanted);
  }
  pod.beat(wanted, 0.0, false);  // link down: not preferred any more
  auto out = pod.attach("h3", DeviceKind::kNet, "eth9");
  EXPECT_FALSE(out.preferred_used);
  EXPECT_NE(out.attachment.primary().device, wanted);
}

TEST(PodAllocator, HeartbeatsRenewTheLease) {
  Pod pod;
  const uint32_t d = pod.add_nic("eth0", "h1");
  const uint64_t lease = pod.allocator.config().lease_ns;
  pod.now += lease - kMs;
  EXPECT_EQ(pod.beat(d).status, HeartbeatStatus::kRenewed);
  pod.now += lease - kMs;
  EXPECT_TRUE(pod.allocator.expire(pod.now).empty());
  EXPECT_EQ(pod.state.device(d)->health, DeviceHealth::kHealthy);
  pod.now += 2 * kMs;
  auto report = pod.allocator.expire(pod.now);
  ASSERT_EQ(report.failed_devices.size(), 1u);
  EXPECT_EQ(pod.state.device(d)->health, DeviceHealth::kDead);
  EXPECT_EQ(pod.beat(d).status, HeartbeatStatus::kExpired);
  EXPECT_EQ(pod.allocator.heartbeat(12345, {}, pod.now).status, HeartbeatStatus::kUnknown);
  // Expiry is reported once.
  EXPECT_TRUE(pod.allocator.expire(pod.now + lease).empty());
}

TEST(PodAllocator, DeadDeviceIsReplacedByItsReRegistration) {
  Pod pod;
  const uint32_t d = pod.add_nic("eth0", "h1");
  pod.now += 2 * pod.allocator.config().lease_ns;
  pod.allocator.expire(pod.now);
  auto again = pod.allocator.register_device({DeviceKind::kNet, "eth0", "h1", k10G, 0, 0, {}}, 2, pod.now);
  ASSERT_EQ(again.status, RegisterStatus::kRegistered);
  EXPECT_EQ(again.replaced, d);
  EXPECT_NE(again.device, d);
  EXPECT_FALSE(pod.state.device(d).has_value());
  EXPECT_EQ(pod.state.devices().size(), 1u);
}

}  // namespace
}  // namespace cxlpool::devpool

namespace cxlpool::devpool {
namespace {

using test::Pod;

// An SSD's backup is another path to the same device (the same name on
// another host: a dual-ported or shared SSD), never another SSD, which
// holds other data.
TEST(PodAllocator, StorageBackupIsAnotherPathToTheSameDevice) {
  Pod pod;
  const uint32_t a = pod.add_ssd("ssd0", "h1");
  pod.add_ssd("ssd1", "h2");
  const uint32_t c = pod.add_ssd("ssd0", "h3");
  auto out = pod.allocator.attach({"h9", DeviceKind::kBlk, "ssd0", "h1"}, 99, pod.now);
  ASSERT_EQ(out.status, AttachStatus::kAttached);
  EXPECT_EQ(out.attachment.primary().device, a);
  EXPECT_EQ(out.attachment.backup().device, c);
  // The primary's path goes: the other path takes over; ssd1 never joins.
  pod.allocator.deregister_device(a, pod.now);
  const Attachment now = pod.get(out.attachment.id);
  EXPECT_EQ(now.primary().device, c);
  EXPECT_EQ(now.backup().device, kNoDevice);
}

}  // namespace
}  // namespace cxlpool::devpool
