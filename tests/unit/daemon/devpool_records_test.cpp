// SPDX-License-Identifier: Apache-2.0
// The device pool's records in etcd: key layout, values that round-trip,
// and every way a value another daemon wrote can be wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cxlpool/devpool/device_load.hpp"
#include "devpool/devpool_records.hpp"

namespace cxlpool::daemon {
namespace {

using devpool::Attachment;
using devpool::Device;
using devpool::DeviceHealth;
using devpool::DeviceKind;
using nlohmann::json;

const DevpoolLimits kLimits{64, 32};
const std::string kPrefix = "/cxlpool/pods/p1/devpool/";

Device nic() {
  Device d;
  d.id = 7;
  d.line = 3;
  d.spec = {DeviceKind::kNet, "eth1", "host-a", 10'000'000'000, 0, 0, {0x02, 0x00, 0x5e, 0xab, 0xcd, 0xef}};
  d.health = DeviceHealth::kLinkDown;
  d.owner = 12;
  d.registered_ns = 123456789;
  return d;
}

Attachment attachment() {
  Attachment a;
  a.id = 9;
  a.line = 5;
  a.host = "host-b";
  a.kind = DeviceKind::kBlk;
  a.legs[0] = {4, 10};
  a.legs[1] = {devpool::kNoDevice, 11};
  a.active = 0;
  a.generation = 3;
  a.owner = 2;
  a.attached_ns = 99;
  return a;
}

// The device's value with one field replaced (or removed, with a null).
std::string device_with(const char* field, const json& value) {
  json doc = json::parse(encode_device_record(nic(), "node-a"));
  if (value.is_null()) {
    doc.erase(field);
  } else {
    doc[field] = value;
  }
  return doc.dump();
}

std::string attachment_with(const char* field, const json& value) {
  json doc = json::parse(encode_attachment_record(attachment(), "node-b"));
  if (value.is_null()) {
    doc.erase(field);
  } else {
    doc[field] = value;
  }
  return doc.dump();
}

TEST(DevpoolRecords, KeysNameTheirLine) {
  EXPECT_EQ(devpool_prefix("p1"), kPrefix);
  EXPECT_EQ(devpool_key(kPrefix, {DevpoolKeyKind::kDevice, 3}), kPrefix + "devices/3");
  EXPECT_EQ(devpool_key(kPrefix, {DevpoolKeyKind::kAttachment, 0}), kPrefix + "attachments/0");
  EXPECT_EQ(devpool_key(kPrefix, {DevpoolKeyKind::kNextId, 0}), kPrefix + "next_id");
  for (const DevpoolKey& k : {DevpoolKey{DevpoolKeyKind::kDevice, 63}, DevpoolKey{DevpoolKeyKind::kAttachment, 12},
                              DevpoolKey{DevpoolKeyKind::kNextId, 0}}) {
    auto parsed = parse_devpool_key(devpool_key(kPrefix, k), kPrefix);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed, k);
  }
  for (const char* bad : {"devices/", "devices/-1", "devices/01", "devices/1x", "devices/1234567890",
                                "attachments/+2", "next_id/1", "members/host-a", "device/1", ""}) {
    EXPECT_FALSE(parse_devpool_key(kPrefix + bad, kPrefix)) << bad;
  }
  EXPECT_FALSE(parse_devpool_key("/cxlpool/pods/p2/devpool/devices/1", kPrefix));
}

TEST(DevpoolRecords, DeviceRoundTrips) {
  const std::string text = encode_device_record(nic(), "node-a");
  auto back = decode_device_record(text, 3, kLimits);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->device, nic());
  EXPECT_EQ(back->member, "node-a");
  Device ssd = nic();
  ssd.spec = {DeviceKind::kBlk, "ssd0", "host-a", 1ull << 40, 500'000, 2'000'000'000, {}};
  ssd.health = DeviceHealth::kHealthy;
  auto ssd_back = decode_device_record(encode_device_record(ssd, "node-a"), 3, kLimits);
  ASSERT_TRUE(ssd_back) << ssd_back.error().message;
  EXPECT_EQ(ssd_back->device, ssd);
}

TEST(DevpoolRecords, HostileDeviceValuesAreRefused) {
  struct Case {
    const char* field;
    json value;
  };
  const Case cases[] = {
      {"member", nullptr},          {"member", ".hidden"},     {"member", 5},
      {"id", 0},                    {"id", -1},                {"id", 4294967296ull},
      {"id", "7"},                  {"id", 7.5},               {"line", 4},  // not the key's line
      {"kind", "gpu"},              {"kind", nullptr},         {"name", ""},
      {"name", std::string(65, 'n')}, {"name", "eth\n1"},      {"host", nullptr},
      {"capacity", -5},             {"iops", "fast"},          {"mac", "02:00:5e:ab:cd"},
      {"mac", "02:00:5E:AB:CD:EF"}, {"mac", "02-00-5e-ab-cd-ef"}, {"health", "sick"},
      {"owner", nullptr},           {"registered_ns", true},
  };
  for (const Case& c : cases) {
    auto out = decode_device_record(device_with(c.field, c.value), 3, kLimits);
    ASSERT_FALSE(out) << c.field << " = " << c.value.dump();
    EXPECT_EQ(out.error().code, EINVAL);
    EXPECT_NE(out.error().message.find(c.field), std::string::npos) << out.error().message;
  }
  // A line past this daemon's table, a block device with a MAC, not JSON, too large.
  Device far = nic();
  far.line = 64;
  EXPECT_FALSE(decode_device_record(encode_device_record(far, "node-a"), 64, kLimits));
  EXPECT_FALSE(decode_device_record(device_with("kind", "blk"), 3, kLimits));
  for (const std::string& bad :
       std::vector<std::string>{"", "[]", "{", "null", "\"x\"", std::string(5000, ' ') + "{}"}) {
    EXPECT_FALSE(decode_device_record(bad, 3, kLimits)) << bad.substr(0, 20);
  }
}

Device loaded_nic() {
  Device d = nic();
  d.load = {734'000, 917'500'000, 81'000, 42};
  return d;
}

TEST(DevpoolRecords, DeviceLoadRoundTrips) {
  // Written only once its daemon shared a load: a record without one
  // looks as it did before the field existed.
  EXPECT_FALSE(json::parse(encode_device_record(nic(), "node-a")).contains("load"));
  const std::string text = encode_device_record(loaded_nic(), "node-a");
  const json doc = json::parse(text);
  ASSERT_TRUE(doc.contains("load"));
  EXPECT_EQ(doc["load"]["utilization_ppm"], 734'000);
  auto back = decode_device_record(text, 3, kLimits);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->device, loaded_nic());
  // The largest figures pass.
  Device max = nic();
  max.load = {devpool::kMaxUtilizationPpm, UINT64_MAX, UINT64_MAX, UINT32_MAX};
  auto max_back = decode_device_record(encode_device_record(max, "node-a"), 3, kLimits);
  ASSERT_TRUE(max_back) << max_back.error().message;
  EXPECT_EQ(max_back->device.load, max.load);
}

TEST(DevpoolRecords, HostileDeviceLoadIsRefused) {
  auto with_load = [](const json& load) {
    json doc = json::parse(encode_device_record(loaded_nic(), "node-a"));
    doc["load"] = load;
    return doc.dump();
  };
  auto load_with = [&](const char* field, const json& value) {
    json load = json::parse(encode_device_record(loaded_nic(), "node-a"))["load"];
    if (value.is_null()) {
      load.erase(field);
    } else {
      load[field] = value;
    }
    return with_load(load);
  };
  const std::vector<std::string> cases = {
      with_load(nullptr),
      with_load(5),
      with_load("busy"),
      with_load(json::array({1, 2, 3, 4})),
      with_load(json::object()),
      load_with("utilization_ppm", nullptr),
      load_with("utilization_ppm", 4'000'000'001ull),
      load_with("utilization_ppm", -1),
      load_with("utilization_ppm", 0.5),
      load_with("bytes_per_s", nullptr),
      load_with("bytes_per_s", "many"),
      load_with("bytes_per_s", -3),
      load_with("ops_per_s", nullptr),
      load_with("ops_per_s", 1e30),
      load_with("samples", nullptr),
      load_with("samples", 0),  // a written load has at least one sample
      load_with("samples", 4294967296ull),
      load_with("extra", 1),
  };
  for (const std::string& text : cases) {
    auto out = decode_device_record(text, 3, kLimits);
    ASSERT_FALSE(out) << text;
    EXPECT_EQ(out.error().code, EINVAL);
    EXPECT_NE(out.error().message.find("load"), std::string::npos) << out.error().message;
  }
}

TEST(DevpoolRecords, AttachmentRoundTrips) {
  auto back = decode_attachment_record(encode_attachment_record(attachment(), "node-b"), 5, kLimits);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->attachment, attachment());
  EXPECT_EQ(back->member, "node-b");
}

TEST(DevpoolRecords, HostileAttachmentValuesAreRefused) {
  struct Case {
    const char* field;
    json value;
  };
  const Case cases[] = {
      {"id", 0},
      {"line", 6},
      {"host", ""},
      {"kind", "nic"},
      {"legs", nullptr},
      {"legs", json::array()},
      {"legs", json::array({json{{"device", 4}, {"slot", 10}}})},
      {"legs", json::array({json{{"device", 4}, {"slot", 10}}, 3})},
      // Another line's slots: would hand out a slot twice.
      {"legs", json::array({json{{"device", 4}, {"slot", 12}}, json{{"device", 0}, {"slot", 11}}})},
      {"legs", json::array({json{{"device", 4}, {"slot", 10}}, json{{"device", 4}, {"slot", 11}}})},
      {"legs", json::array({json{{"device", -1}, {"slot", 10}}, json{{"device", 0}, {"slot", 11}}})},
      {"legs", json::array({json{{"slot", 10}}, json{{"device", 0}, {"slot", 11}}})},
      {"active", 2},
      {"generation", 0},
      {"owner", "me"},
      {"attached_ns", nullptr},
      {"member", "a/b"},
  };
  for (const Case& c : cases) {
    auto out = decode_attachment_record(attachment_with(c.field, c.value), 5, kLimits);
    ASSERT_FALSE(out) << c.field << " = " << c.value.dump();
    EXPECT_EQ(out.error().code, EINVAL);
    EXPECT_NE(out.error().message.find(c.field), std::string::npos) << out.error().message;
  }
  Attachment far = attachment();
  far.line = 32;
  far.legs[0].slot = 64;
  far.legs[1].slot = 65;
  EXPECT_FALSE(decode_attachment_record(encode_attachment_record(far, "node-b"), 32, kLimits));
}

TEST(DevpoolRecords, NextId) {
  EXPECT_EQ(encode_next_id(42), "42");
  EXPECT_EQ(decode_next_id("42").value_or(0), 42u);
  EXPECT_EQ(decode_next_id("4294967295").value_or(0), 4294967295u);
  for (const char* bad : {"", "0", "-1", "4294967296", "07", "1e3", " 1", "x"}) {
    EXPECT_FALSE(decode_next_id(bad)) << bad;
  }
}

}  // namespace
}  // namespace cxlpool::daemon
