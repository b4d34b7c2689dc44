// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc (67) and its reply (68): wire layout as docs/protocol.md
// states it, the rules the codec enforces on both sides, and the reply's
// descriptor.
#include <gtest/gtest.h>

#include <string>

#include "cxlpool/proto/messages.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;

TEST(GpuHostMessages, LayoutIsTheDocumentedOne) {
  // Not a power of two, and above 4 GiB: neither is a rule.
  const GpuHostAlloc req{.tier_id = 3, .device = 1, .bytes = (5ull << 30) + 12345};
  auto bytes = encode(7, req);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(*bytes, datagram(MsgType::kGpuHostAlloc, Bytes().u32(3).u32(1).u64((5ull << 30) + 12345)));
  auto back = decode(*bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->message, Message(req));
  EXPECT_TRUE(is_request(MsgType::kGpuHostAlloc));

  const GpuHostAllocReply reply{.bytes = 2ull << 20, .numa_node = 7};
  bytes = encode(7, reply);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(*bytes, datagram(MsgType::kGpuHostAllocReply, Bytes().u64(2ull << 20).u32(7)));
  back = decode(*bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->message, Message(reply));
  EXPECT_FALSE(is_request(MsgType::kGpuHostAllocReply));
}

TEST(GpuHostMessages, ZeroBytesRejectsOnBothSides) {
  auto enc = encode(1, GpuHostAlloc{.tier_id = 0, .device = 0, .bytes = 0});
  ASSERT_FALSE(enc);
  EXPECT_EQ(enc.error().code, EINVAL);
  EXPECT_NE(enc.error().message.find("GpuHostAlloc.bytes"), std::string::npos) << enc.error().message;
  auto dec = decode(datagram(MsgType::kGpuHostAlloc, Bytes().u32(0).u32(0).u64(0)));
  ASSERT_FALSE(dec);
  EXPECT_EQ(dec.error().code, EPROTO);
  EXPECT_NE(dec.error().message.find("GpuHostAlloc.bytes"), std::string::npos) << dec.error().message;

  enc = encode(1, GpuHostAllocReply{.bytes = 0, .numa_node = 0});
  ASSERT_FALSE(enc);
  EXPECT_EQ(enc.error().code, EINVAL);
  dec = decode(datagram(MsgType::kGpuHostAllocReply, Bytes().u64(0).u32(0)));
  ASSERT_FALSE(dec);
  EXPECT_EQ(dec.error().code, EPROTO);
  EXPECT_NE(dec.error().message.find("GpuHostAllocReply.bytes"), std::string::npos) << dec.error().message;
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
