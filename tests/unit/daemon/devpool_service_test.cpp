// SPDX-License-Identifier: Apache-2.0
// The device-pool service over a pod file in a temporary directory: what a
// register, an attach and a failover write into the pod file, leases on the
// service's clock parameter, per-uid limits, the file's lock, counters.
#include <gtest/gtest.h>

#include <map>

#include "cxlpool/devpool/line_access.hpp"
#include "cxlpool/devpool/pod_region.hpp"
#include "devpool/devpool_service.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::daemon {
namespace {

constexpr uint64_t kMs = 1'000'000;
using Reader = devpool::PodTableReader<devpool::CoherentLines>;

DevpoolSection small() {
  DevpoolSection s;
  s.link_slots = 4;
  s.max_devices = 3;
  s.link_buffer_bytes = 4096;
  s.lease_ms = 100;
  s.telemetry_ms = 10;
  s.max_devices_per_uid = 2;
  s.max_attachments_per_uid = 1;
  return s;
}

proto::DevRegister nic(const std::string& name, const std::string& host) {
  return proto::DevRegister{.kind = proto::DevKind::kNet, .capacity = 10'000'000'000, .name = name, .host = host};
}

std::map<std::string, uint64_t> counters(const DevpoolService& s) {
  std::vector<proto::Counter> out;
  s.add_counters(out);
  std::map<std::string, uint64_t> m;
  for (const auto& c : out) m[c.name] = c.value;
  return m;
}

struct ServiceTest : ::testing::Test {
  void SetUp() override {
    auto created = DevpoolService::create(small(), dir.path());
    ASSERT_TRUE(created) << created.error().message;
    service = std::move(*created);
  }
  devpool::AttachmentLine line(uint32_t index) {
    auto memory = pod();
    auto reader = Reader::open(memory);
    EXPECT_TRUE(reader);
    return *reader->attachment(index);
  }
  std::span<std::byte> pod() {
    if (!mapping.valid()) {
      auto m = Mapping::map(size, PROT_READ | PROT_WRITE, MAP_SHARED, service->pod_fd());
      EXPECT_TRUE(m);
      mapping = std::move(*m);
    }
    return {mapping.data(), mapping.length()};
  }
  test::TempDir dir{"devpool"};
  std::unique_ptr<DevpoolService> service;
  Mapping mapping;
  size_t size = 0;
};

TEST_F(ServiceTest, RegisterAttachFailoverThroughThePodFile) {
  auto a = service->register_device(1, 0, true, nic("eth0", "h1"), 0);
  auto b = service->register_device(2, 0, true, nic("eth0", "h2"), 0);
  ASSERT_TRUE(a && b);
  size = a->pod_bytes;
  EXPECT_EQ(service->pod_path(), dir.path() / "devpool.pod");
  auto at = service->attach(3, 0, true, proto::DevAttach{.kind = proto::DevKind::kNet, .host = "h3"}, 0);
  ASSERT_TRUE(at) << at.error().message;
  EXPECT_EQ(at->device[at->active], a->device_id);
  auto l = line(at->line);
  EXPECT_EQ(l.generation, at->generation);
  EXPECT_EQ(l.active_device(), a->device_id);
  EXPECT_EQ(l.device[l.active ^ 1], b->device_id);

  service->close_session(1, kMs);
  l = line(at->line);
  EXPECT_EQ(l.generation, at->generation + 1);
  EXPECT_EQ(l.active_device(), b->device_id);
  auto c = counters(*service);
  EXPECT_EQ(c["devpool.failovers_total"], 1u);
  EXPECT_EQ(c["devpool.session_losses"], 1u);
  EXPECT_EQ(c["devpool.devices"], 1u);
  EXPECT_EQ(c["devpool.attachments"], 1u);

  // The frontend's connection closes: the line is free.
  service->close_session(3, kMs);
  EXPECT_EQ(line(at->line).state, devpool::LineState::kFree);
  EXPECT_EQ(counters(*service)["devpool.attachments"], 0u);
}

TEST_F(ServiceTest, LeasesRunOnTheGivenClock) {
  auto a = service->register_device(1, 0, true, nic("eth0", "h1"), 0);
  auto b = service->register_device(2, 0, true, nic("eth0", "h2"), 0);
  ASSERT_TRUE(a && b);
  size = a->pod_bytes;
  auto at = service->attach(3, 0, true, proto::DevAttach{.kind = proto::DevKind::kNet, .host = "h3"}, 0);
  ASSERT_TRUE(at);
  ASSERT_TRUE(service->heartbeat(2, proto::DevHeartbeat{b->device_id, 1, 0, 0}, 90 * kMs));
  service->check_leases(150 * kMs);  // a's lease (100 ms from 0) ran out, b's runs to 190 ms
  EXPECT_EQ(line(at->line).active_device(), b->device_id);
  EXPECT_EQ(counters(*service)["devpool.lease_expiries"], 1u);
  auto stale = service->heartbeat(1, proto::DevHeartbeat{a->device_id, 1, 0, 0}, 160 * kMs);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ESTALE);
  // Another connection's device is not this one's to beat for.
  EXPECT_EQ(service->heartbeat(9, proto::DevHeartbeat{b->device_id, 1, 0, 0}, 160 * kMs).error().code, ENOENT);
  const auto list = service->list(160 * kMs);
  ASSERT_EQ(list.devices.size(), 2u);
  EXPECT_EQ(list.devices[0].health, proto::DevHealth::kDead);
  EXPECT_EQ(list.devices[1].lease_left_ms, 30u);
}

TEST_F(ServiceTest, PerUidLimitsSpareAdmins) {
  ASSERT_TRUE(service->register_device(1, 1000, false, nic("a", "h"), 0));
  ASSERT_TRUE(service->register_device(1, 1000, false, nic("b", "h"), 0));
  auto third = service->register_device(1, 1000, false, nic("c", "h"), 0);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, EDQUOT);
  EXPECT_TRUE(service->register_device(2, 0, true, nic("c", "h"), 0));
  const proto::DevAttach req{.kind = proto::DevKind::kNet, .host = "x"};
  ASSERT_TRUE(service->attach(5, 1000, false, req, 0));
  EXPECT_EQ(service->attach(5, 1000, false, req, 0).error().code, EDQUOT);
  EXPECT_TRUE(service->attach(6, 0, true, req, 0));
  // The table is full (4 slots: 2 attachments).
  EXPECT_EQ(service->attach(6, 0, true, req, 0).error().code, ENOSPC);
  // Closing a session gives its uid's share back.
  service->close_session(1, kMs);
  EXPECT_TRUE(service->register_device(7, 1000, false, nic("d", "h"), kMs));
}

TEST_F(ServiceTest, ANameHeldIsRefusedNamingItsHolder) {
  auto first = service->register_device(1, 0, true, nic("eth0", "h1"), 0);
  ASSERT_TRUE(first);
  auto twin = service->register_device(2, 0, true, nic("eth0", "h1"), 0);
  ASSERT_FALSE(twin);
  EXPECT_EQ(twin.error().code, EEXIST);
  EXPECT_NE(twin.error().message.find("h1/eth0 is registered already as device " + std::to_string(first->device_id)),
            std::string::npos)
      << twin.error().message;
  auto c = counters(*service);
  EXPECT_EQ(c["devpool.names_taken"], 1u);
  EXPECT_EQ(c["devpool.registrations_refused"], 1u);
  // The same name on another host is another device; once the holder's
  // backend is gone the name is free.
  EXPECT_TRUE(service->register_device(2, 0, true, nic("eth0", "h2"), 0));
  service->close_session(1, kMs);
  EXPECT_TRUE(service->register_device(3, 0, true, nic("eth0", "h1"), kMs));
}

TEST_F(ServiceTest, ThePodFileIsLocked) {
  auto second = DevpoolService::create(small(), dir.path());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, EBUSY);
}

TEST_F(ServiceTest, AdminFailoverOfAnUnknownDevice) {
  EXPECT_EQ(service->failover(42, 0).error().code, ENOENT);
}

}  // namespace
}  // namespace cxlpool::daemon
