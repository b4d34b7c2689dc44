// SPDX-License-Identifier: Apache-2.0
// The device-pool messages (70-80): wire layout as docs/protocol.md states
// it, the rules the codec enforces on both sides, and the descriptors of
// the register and attach replies.
#include <gtest/gtest.h>

#include <string>

#include "codec_checks.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;

TEST(DevMessages, LayoutIsTheDocumented) {
  testing::expect_wire_form(
      DevHeartbeat{.device_id = 3, .link_up = 0, .bytes_per_s = 1000, .ops_per_s = 7},
      datagram(MsgType::kDevHeartbeat, Bytes().u32(3).u8(0).u64(1000).u64(7)));
  testing::expect_wire_form(DevDetach{.attachment_id = 9}, datagram(MsgType::kDevDetach, Bytes().u32(9)));
  testing::expect_wire_form(DevFailover{.device_id = 4}, datagram(MsgType::kDevFailover, Bytes().u32(4)));
  testing::expect_wire_form(DevFailoverReply{.device_id = 4, .moved = 2, .without_backup = 1},
                            datagram(MsgType::kDevFailoverReply, Bytes().u32(4).u32(2).u32(1)));
  Bytes reg = Bytes().u8(1).u64(1ull << 40).u64(1000).u64(2000);
  for (int i = 0; i < 6; ++i) reg.u8(0);
  reg.str("nvme0n1").str("h1");
  testing::expect_wire_form(
      DevRegister{.kind = DevKind::kBlk, .capacity = 1ull << 40, .iops = 1000, .bandwidth_bps = 2000,
                  .name = "nvme0n1", .host = "h1"},
      datagram(MsgType::kDevRegister, reg));
  testing::expect_wire_form(DevAttach{.kind = DevKind::kNet, .host = "h2"},
                            datagram(MsgType::kDevAttach, Bytes().u8(0).str("h2").str("").str("")));
  EXPECT_TRUE(is_request(MsgType::kDevRegister));
  EXPECT_FALSE(is_request(MsgType::kDevListReply));
}

TEST(DevMessages, RulesRejectOnBothSides) {
  testing::expect_encode_refused(DevRegister{.kind = DevKind::kNet, .capacity = 0, .name = "e", .host = "h"},
                                 "DevRegister.capacity");
  testing::expect_encode_refused(DevRegister{.kind = DevKind::kNet, .capacity = 1, .name = "", .host = "h"},
                                 "DevRegister.name");
  testing::expect_encode_refused(
      DevRegister{.kind = DevKind::kNet, .capacity = 1, .name = std::string(65, 'x'), .host = "h"},
      "DevRegister.name");
  testing::expect_encode_refused(
      DevRegister{.kind = DevKind::kBlk, .capacity = 1, .mac = {1, 0, 0, 0, 0, 0}, .name = "n", .host = "h"},
      "DevRegister.mac");
  testing::expect_encode_refused(DevHeartbeat{.device_id = 0}, "DevHeartbeat.device_id");
  testing::expect_encode_refused(DevHeartbeat{.device_id = 1, .link_up = 2}, "DevHeartbeat.link_up");
  testing::expect_encode_refused(DevAttach{.kind = DevKind::kNet, .host = "h", .preferred_host = "a"},
                                 "DevAttach.preferred_host");
  testing::expect_encode_refused(DevAttach{.kind = DevKind::kNet, .host = ""}, "DevAttach.host");
  testing::expect_encode_refused(DevDetach{.attachment_id = 0}, "DevDetach.attachment_id");
  testing::expect_encode_refused(DevFailover{.device_id = 0}, "DevFailover.device_id");

  testing::expect_decode_refused(datagram(MsgType::kDevHeartbeat, Bytes().u32(1).u8(2).u64(0).u64(0)), EPROTO,
                                 "DevHeartbeat.link_up");
  Bytes bad_kind = Bytes().u8(2).u64(1).u64(0).u64(0);
  for (int i = 0; i < 6; ++i) bad_kind.u8(0);
  bad_kind.str("e").str("h");
  testing::expect_decode_refused(datagram(MsgType::kDevRegister, bad_kind), EPROTO,
                                 "DevRegister.kind");
  testing::expect_decode_refused(datagram(MsgType::kDevAttach, Bytes().u8(0).str("h\x01").str("").str("")),
                                 EPROTO, "DevAttach.host");
}

TEST(DevMessages, ReplyRulesKeepSlotsInsideThePod) {
  DevAttachReply r{.attachment_id = 1, .line = 0, .generation = 1, .active = 0, .device = {1, 0}, .slot = {0, 1},
                   .pod_bytes = 3 * 4096, .slot_bytes = 4096, .link_slots = 2, .max_devices = 1,
                   .max_attachments = 1};
  testing::expect_round_trip(r);
  DevAttachReply bad = r;
  bad.slot[1] = 2;
  testing::expect_encode_refused(bad, "DevAttachReply.slot");
  bad = r;
  bad.device[0] = 0;
  testing::expect_encode_refused(bad, "DevAttachReply.device");
  bad = r;
  bad.slot_bytes = 1000;
  testing::expect_encode_refused(bad, "DevAttachReply.slot_bytes");
  bad = r;
  bad.pod_bytes = 4096;
  testing::expect_encode_refused(bad, "DevAttachReply.slot_bytes");
  DevRegisterReply reg{.device_id = 1, .device_line = 1, .lease_ms = 1, .telemetry_ms = 1, .pod_bytes = 8192,
                       .slot_bytes = 4096, .link_slots = 2, .max_devices = 1, .max_attachments = 1};
  testing::expect_encode_refused(reg, "DevRegisterReply.device_line");
}

TEST(DevMessages, RegisterAndAttachRepliesCarryThePodFile) {
  EXPECT_EQ(descriptor_count(MsgType::kDevRegisterReply), 1u);
  EXPECT_EQ(descriptor_count(MsgType::kDevAttachReply), 1u);
  EXPECT_EQ(descriptor_count(MsgType::kDevListReply), 0u);
  EXPECT_EQ(descriptor_count(MsgType::kDevRegister), 0u);
}

}  // namespace
}  // namespace cxlpool::proto
