// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc (67) and its reply (68): wire layout as docs/protocol.md
// states it, the rules the codec enforces on both sides, and the reply's
// descriptor.
#include <gtest/gtest.h>

#include <string>

#include "cxlpool/proto/messages.hpp"
#include "codec_checks.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;

TEST(GpuHostMessages, LayoutIsTheDocumentedOne) {
  // Not a power of two, and above 4 GiB: neither is a rule.
  testing::expect_wire_form(GpuHostAlloc{.tier_id = 3, .device = 1, .bytes = (5ull << 30) + 12345},
                            datagram(MsgType::kGpuHostAlloc, Bytes().u32(3).u32(1).u64((5ull << 30) + 12345)));
  EXPECT_TRUE(is_request(MsgType::kGpuHostAlloc));

  testing::expect_wire_form(GpuHostAllocReply{.bytes = 2ull << 20, .numa_node = 7},
                            datagram(MsgType::kGpuHostAllocReply, Bytes().u64(2ull << 20).u32(7)));
  EXPECT_FALSE(is_request(MsgType::kGpuHostAllocReply));
}

TEST(GpuHostMessages, ZeroBytesRejectsOnBothSides) {
  testing::expect_encode_refused(GpuHostAlloc{.tier_id = 0, .device = 0, .bytes = 0}, "GpuHostAlloc.bytes");
  testing::expect_decode_refused(datagram(MsgType::kGpuHostAlloc, Bytes().u32(0).u32(0).u64(0)), EPROTO,
                                 "GpuHostAlloc.bytes");

  testing::expect_encode_refused(GpuHostAllocReply{.bytes = 0, .numa_node = 0}, "GpuHostAllocReply.bytes");
  testing::expect_decode_refused(datagram(MsgType::kGpuHostAllocReply, Bytes().u64(0).u32(0)), EPROTO,
                                 "GpuHostAllocReply.bytes");
}

TEST(GpuHostMessages, TruncatedAndTrailingBytes) {
  EXPECT_EQ(decode(datagram(MsgType::kGpuHostAlloc, Bytes().u32(0).u32(0).u32(1))).error().code, EPROTO);
  EXPECT_EQ(decode(datagram(MsgType::kGpuHostAlloc, Bytes().u32(0).u32(0).u64(1).u8(0))).error().code, EPROTO);
  EXPECT_EQ(decode(datagram(MsgType::kGpuHostAllocReply, Bytes().u64(1))).error().code, EPROTO);
  EXPECT_EQ(decode(datagram(MsgType::kGpuHostAllocReply, Bytes().u64(1).u32(0).u8(0))).error().code, EPROTO);
}

TEST(GpuHostMessages, TheReplyCarriesOneDescriptor) {
  EXPECT_EQ(descriptor_count(MsgType::kGpuHostAllocReply), 1u);
  EXPECT_EQ(descriptor_count(MsgType::kGpuHostAlloc), 0u);
}

}  // namespace
}  // namespace cxlpool::proto
