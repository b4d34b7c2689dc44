// SPDX-License-Identifier: Apache-2.0
// The network engine's protocol parts: descriptor wire bytes and their
// checks against hostile values, buffer lending with credits, MAC steering.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cxlpool/devpool/net/buffer_pool.hpp"
#include "cxlpool/devpool/net/descriptor.hpp"
#include "cxlpool/devpool/net/steering.hpp"

namespace cxlpool::devpool::net {
namespace {

std::vector<std::byte> encoded(const Descriptor& d) {
  std::vector<std::byte> out(kDescriptorBytes);
  encode_descriptor(d, out.data());
  return out;
}

TEST(NetDescriptor, WireBytesAreLittleEndian) {
  const auto bytes = encoded(Descriptor::frame(0x01020000, 0x05dc));
  const uint8_t expected[16] = {0x00, 0x00, 0x02, 0x01, 0xdc, 0x05, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(bytes.data(), expected, 16), 0);
  const auto announce = encoded(Descriptor::announce(0x0200'0000'0102ull));
  const uint8_t expected_announce[16] = {0, 0, 0, 0, 0, 0, 0x03, 0x00, 0x02, 0x01, 0, 0, 0, 0x02, 0, 0};
  EXPECT_EQ(std::memcmp(announce.data(), expected_announce, 16), 0);
}

TEST(NetDescriptor, RoundTripsEveryKind) {
  for (const Descriptor& d : {Descriptor::frame(2048, 60), Descriptor::frame(0, kNetBufferBytes),
                              Descriptor::credit(4096), Descriptor::announce(0x02aabbccddeeull)}) {
    auto back = decode_descriptor(encoded(d).data());
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->offset, d.offset);
    EXPECT_EQ(back->length, d.length);
    EXPECT_EQ(back->kind, d.kind);
    EXPECT_EQ(back->cookie, d.cookie);
  }
}

TEST(NetDescriptor, RefusesMalformedRecords) {
  const Descriptor bad[] = {
      {0, 60, static_cast<DescriptorKind>(0), 0},  // no kind
      {0, 60, static_cast<DescriptorKind>(9), 0},  // unknown kind
      Descriptor::frame(0, 13),                    // shorter than an Ethernet header
      Descriptor::frame(0, kNetBufferBytes + 1),   // longer than a buffer
      {0, 60, DescriptorKind::kFrame, 1},          // frame with a cookie
      {0, 1, DescriptorKind::kCredit, 0},          // credit with a length
      {0, 0, DescriptorKind::kCredit, 5},          // credit with a cookie
      {64, 0, DescriptorKind::kAnnounce, 1},       // announcement with a buffer
      Descriptor::announce(1ull << 48),            // more than 48 bits of MAC
  };
  for (const Descriptor& d : bad) {
    auto r = decode_descriptor(encoded(d).data());
    ASSERT_FALSE(r) << "offset " << d.offset << " length " << d.length;
    EXPECT_EQ(r.error().code, EBADMSG);
  }
}

TEST(NetDescriptor, FramesMustBeWholeBuffersOfTheSendersArea) {
  std::vector<std::byte> memory(4 * kNetBufferBytes);
  const std::span<std::byte> area(memory);
  auto ok = frame_bytes(area, Descriptor::frame(3 * kNetBufferBytes, kNetBufferBytes));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->data(), memory.data() + 3 * kNetBufferBytes);
  EXPECT_EQ(ok->size(), kNetBufferBytes);
  for (uint32_t offset : {1u, kNetBufferBytes - 64, 4 * kNetBufferBytes, 0xffff'f800u, 0xffff'ffffu}) {
    auto r = frame_bytes(area, Descriptor::frame(offset, 60));
    ASSERT_FALSE(r) << offset;
    EXPECT_EQ(r.error().code, EBADMSG);
  }
  // An area that is not a whole number of buffers: the tail is no buffer.
  auto tail = frame_bytes(area.first(3 * kNetBufferBytes + 100), Descriptor::frame(3 * kNetBufferBytes, 60));
  EXPECT_FALSE(tail);
}

TEST(BufferPool, LendsEveryBufferOnceAndTakesOnlyItsOwnBack) {
  BufferPool pool(3 * kNetBufferBytes + 100);
  EXPECT_EQ(pool.capacity(), 3u);
  std::vector<uint32_t> lent;
  while (auto offset = pool.allocate()) lent.push_back(*offset);
  ASSERT_EQ(lent.size(), 3u);
  EXPECT_EQ(pool.outstanding(), 3u);
  std::sort(lent.begin(), lent.end());
  EXPECT_EQ(lent, (std::vector<uint32_t>{0, kNetBufferBytes, 2 * kNetBufferBytes}));
  ASSERT_TRUE(pool.release(kNetBufferBytes));
  // Twice, misaligned, outside: refused, nothing changes.
  for (uint32_t offset : {kNetBufferBytes, 1u, 3 * kNetBufferBytes, 0xffff'ffffu}) {
    auto r = pool.release(offset);
    ASSERT_FALSE(r) << offset;
    EXPECT_EQ(r.error().code, EBADMSG);
  }
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_EQ(pool.allocate(), kNetBufferBytes);
  pool.put_back(kNetBufferBytes);
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_FALSE(pool.release(kNetBufferBytes)) << "put back, so no longer on loan";
}

TEST(MacSteering, UnicastToTheAnnouncerGroupsToAll) {
  MacSteering steering(2);
  EXPECT_FALSE(steering.unicast(0x020000000001));
  steering.announce(0, 0x020000000001);
  steering.announce(1, 0x020000000002);
  EXPECT_EQ(steering.unicast(0x020000000001), 0u);
  EXPECT_EQ(steering.unicast(0x020000000002), 1u);
  // An address announced again moves (failover keeps the MAC).
  steering.announce(1, 0x020000000001);
  EXPECT_EQ(steering.unicast(0x020000000001), 1u);
  steering.forget(1);
  EXPECT_FALSE(steering.unicast(0x020000000001));
  EXPECT_FALSE(steering.unicast(0x020000000002));
  EXPECT_TRUE(MacSteering::is_group(0xffffffffffff));
  EXPECT_TRUE(MacSteering::is_group(0x01005e000001));
  EXPECT_TRUE(MacSteering::is_group(0x333300000001));
  EXPECT_FALSE(MacSteering::is_group(0x020000000001));
  const std::byte frame[6] = {std::byte{0x02}, std::byte{0xaa}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{7}};
  EXPECT_EQ(destination_mac(frame), 0x02aa00000007ull);
}

}  // namespace
}  // namespace cxlpool::devpool::net
