// SPDX-License-Identifier: Apache-2.0
// The checkpoint messages (81-86): wire layout as docs/protocol.md states
// it, one rejection per rule on both sides, and their descriptors.
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

TEST(CkptMessages, LayoutIsTheDocumentedOne) {
  testing::expect_wire_form(CkptCreate{.pid = 42, .tier_id = 1, .flags = kCkptKillAfter, .name = "w"},
                            datagram(MsgType::kCkptCreate, Bytes().u32(42).u32(1).u32(1).str("w")));
  testing::expect_wire_form(CkptRestore{.policy = CkptPolicy::kMoa, .count = 10, .name = "w"},
                            datagram(MsgType::kCkptRestore, Bytes().u8(1).u32(10).str("w")));
  testing::expect_wire_form(
      CkptRestoreReply{.restore_ns = 7, .clones = {CkptClone{.pid = 5, .keeper = 4, .ns_pid = 3}}},
      datagram(MsgType::kCkptRestoreReply, Bytes().u64(7).u32(1).u32(5).u32(4).u32(3)));
  testing::expect_wire_form(
      CkptListReply{.checkpoints = {CkptEntry{.region_id = 1,
                                              .image_bytes = 2,
                                              .created_unix_ns = 3,
                                              .capture_ns = 4,
                                              .tier_id = 5,
                                              .owner_uid = 6,
                                              .pid = 7,
                                              .threads = 8,
                                              .restores = 9,
                                              .name = "w"}}},
      datagram(MsgType::kCkptListReply,
               Bytes().u32(1).u64(1).u64(2).u64(3).u64(4).u32(5).u32(6).u32(7).u32(8).u32(9).str("w")));
  testing::expect_wire_form(CkptRemove{.name = "w"}, datagram(MsgType::kCkptRemove, Bytes().str("w")));
  EXPECT_TRUE(is_request(MsgType::kCkptCreate));
  EXPECT_TRUE(is_request(MsgType::kCkptRestore));
  EXPECT_TRUE(is_request(MsgType::kCkptList));
  EXPECT_TRUE(is_request(MsgType::kCkptRemove));
  testing::expect_wire_form(RegionAlias{.region_id = 31, .alias = 9},
                            datagram(MsgType::kRegionAlias, Bytes().u64(31).u64(9)));
  EXPECT_TRUE(is_request(MsgType::kRegionAlias));
  EXPECT_FALSE(is_request(MsgType::kCkptRestoreReply));
}

TEST(CkptMessages, EveryRuleRejectsOnBothSides) {
  testing::expect_encode_refused(CkptCreate{.flags = 2, .name = "w"}, "CkptCreate.flags");
  testing::expect_decode_refused(datagram(MsgType::kCkptCreate, Bytes().u32(0).u32(0).u32(2).str("w")), EPROTO,
                                 "CkptCreate.flags");
  testing::expect_encode_refused(CkptCreate{.name = ".hidden"}, "CkptCreate.name");
  testing::expect_decode_refused(datagram(MsgType::kCkptCreate, Bytes().u32(0).u32(0).u32(0).str("a/b")), EPROTO,
                                 "CkptCreate.name");
  testing::expect_encode_refused(CkptCreate{.name = std::string(kMaxCkptNameLength + 1, 'a')}, "CkptCreate.name");
  testing::expect_encode_refused(CkptRestore{.count = 0, .name = "w"}, "CkptRestore.count");
  testing::expect_decode_refused(datagram(MsgType::kCkptRestore, Bytes().u8(0).u32(kMaxCkptClones + 1).str("w")),
                                 EPROTO, "CkptRestore.count");
  testing::expect_decode_refused(datagram(MsgType::kCkptRestore, Bytes().u8(3).u32(1).str("w")), EPROTO,
                                 "CkptRestore.policy");
  testing::expect_encode_refused(CkptRestoreReply{.clones = {CkptClone{.pid = 0, .keeper = 1, .ns_pid = 1}}},
                                 "CkptRestoreReply.clones[0].pid");
  testing::expect_encode_refused(CkptListReply{.checkpoints = {CkptEntry{.image_bytes = 1, .name = "w"}}},
                                 "CkptListReply.checkpoints[0].threads");
  testing::expect_encode_refused(CkptListReply{.checkpoints = {CkptEntry{.threads = 1, .name = "w"}}},
                                 "CkptListReply.checkpoints[0].image_bytes");
  testing::expect_encode_refused(CkptRemove{.name = ""}, "CkptRemove.name");
  testing::expect_encode_refused(RegionAlias{.region_id = 0, .alias = 9}, "RegionAlias.region_id");
  testing::expect_decode_refused(datagram(MsgType::kRegionAlias, Bytes().u64(31).u64(0)), EPROTO,
                                 "RegionAlias.alias");
  testing::expect_decode_refused(datagram(MsgType::kRegionAlias, Bytes().u64(31).u64(31)), EPROTO,
                                 "RegionAlias.alias");
}

TEST(CkptMessages, Descriptors) {
  EXPECT_EQ(descriptor_count(MsgType::kCkptCreate), 1u);
  EXPECT_EQ(descriptor_count(Message{CkptCreate{.pid = 0, .name = "w"}}), 1u);
  EXPECT_EQ(descriptor_count(Message{CkptCreate{.pid = 9, .name = "w"}}), 0u);
  EXPECT_EQ(descriptor_count(MsgType::kCkptRestore), 3u);
  EXPECT_EQ(descriptor_count(MsgType::kCkptRestoreReply), 0u);
}

}  // namespace
}  // namespace cxlpool::proto
