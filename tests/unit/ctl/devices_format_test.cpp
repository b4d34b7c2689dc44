// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl devices` output: JSON fields, the text tables, and how an
// operator's DEVICE argument is resolved.
#include <gtest/gtest.h>

#include "devices_format.hpp"

namespace cxlpool::ctl {
namespace {

proto::DevListReply sample() {
  proto::DevListReply r;
  r.enabled = 1;
  r.failovers = 3;
  r.pod_path = "/run/cxlpool/devpool.pod";
  r.devices = {proto::DevDeviceEntry{.id = 1, .kind = proto::DevKind::kNet, .capacity = 10'000'000'000,
                                     .mac = {2, 0, 0, 0, 0, 0xa}, .load_ppm = 250'000, .samples = 4, .primaries = 1,
                                     .name = "eth0", .host = "h1"},
               proto::DevDeviceEntry{.id = 2, .kind = proto::DevKind::kNet, .health = proto::DevHealth::kLinkDown,
                                     .capacity = 10'000'000'000, .backups = 1, .name = "eth0", .host = "h2"},
               proto::DevDeviceEntry{.id = 3, .kind = proto::DevKind::kBlk, .capacity = 1ull << 40, .iops = 1000,
                                     .name = "nvme0n1", .host = "h2"}};
  r.attachments = {proto::DevAttachmentEntry{.id = 7, .kind = proto::DevKind::kNet, .active = 1, .generation = 2,
                                             .device = {2, 1}, .slot = {4, 5}, .client_id = 9, .host = "h3"}};
  return r;
}

TEST(DevicesFormat, JsonNamesPrimaryAndBackupByActiveLeg) {
  const auto j = devices_json(sample());
  EXPECT_TRUE(j["enabled"].get<bool>());
  EXPECT_EQ(j["failovers"], 3);
  ASSERT_EQ(j["devices"].size(), 3u);
  EXPECT_EQ(j["devices"][0]["mac"], "02:00:00:00:00:0a");
  EXPECT_DOUBLE_EQ(j["devices"][0]["load"].get<double>(), 0.25);
  EXPECT_EQ(j["devices"][1]["health"], "link-down");
  EXPECT_EQ(j["devices"][2]["iops"], 1000);
  const auto& a = j["attachments"][0];
  EXPECT_EQ(a["primary"], 1);
  EXPECT_EQ(a["backup"], 2);
  EXPECT_EQ(a["primary_slot"], 5);
  EXPECT_EQ(a["backup_slot"], 4);
}

TEST(DevicesFormat, JsonBackupIsNullWithoutOne) {
  auto r = sample();
  r.attachments[0].device[0] = proto::kNoDeviceId;
  EXPECT_TRUE(devices_json(r)["attachments"][0]["backup"].is_null());
}

TEST(DevicesFormat, TextTables) {
  const std::string text = devices_text(sample());
  EXPECT_NE(text.find("/run/cxlpool/devpool.pod"), std::string::npos);
  EXPECT_NE(text.find("link-down"), std::string::npos);
  EXPECT_NE(text.find("25.0%"), std::string::npos);
  EXPECT_NE(text.find("h1/eth0"), std::string::npos);  // the attachment's primary
  proto::DevListReply off;
  EXPECT_EQ(devices_text(off), "device pool: off\n");
}

TEST(DevicesFormat, StateBackend) {
  proto::DevListReply r = sample();
  r.state_backend = "embedded";
  r.state_connected = 1;
  EXPECT_NE(devices_text(r).find("state: embedded\n"), std::string::npos) << devices_text(r);
  r.state_backend = "etcd";
  EXPECT_NE(devices_text(r).find("state: etcd (connected)\n"), std::string::npos) << devices_text(r);
  r.state_connected = 0;
  r.state_error = "etcd /v3/kv/range: no reply";
  EXPECT_NE(devices_text(r).find("state: etcd (not connected: etcd /v3/kv/range: no reply)\n"), std::string::npos)
      << devices_text(r);
  const auto j = devices_json(r);
  EXPECT_EQ(j["state"]["backend"], "etcd");
  EXPECT_FALSE(j["state"]["connected"].get<bool>());
  EXPECT_EQ(j["state"]["last_error"], "etcd /v3/kv/range: no reply");
}

TEST(DevicesFormat, FindDevice) {
  const auto r = sample();
  EXPECT_EQ(find_device(r, "3"), 3u);
  EXPECT_EQ(find_device(r, "h2/eth0"), 2u);
  EXPECT_EQ(find_device(r, "nvme0n1"), 3u);
  EXPECT_FALSE(find_device(r, "eth0").has_value());  // two hosts have one
  EXPECT_FALSE(find_device(r, "nope").has_value());
}

TEST(DevicesFormat, Failover) {
  proto::DevFailoverReply f{.device_id = 2, .moved = 3, .without_backup = 1};
  EXPECT_EQ(failover_json(f)["moved"], 3);
  EXPECT_NE(failover_text(f).find("1 stay"), std::string::npos);
}

}  // namespace
}  // namespace cxlpool::ctl
