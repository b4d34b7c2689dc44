// SPDX-License-Identifier: Apache-2.0
// The link layout: format, open, hostile headers, buffer references.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "channel_records.hpp"
#include "cxlpool/devpool/link.hpp"

namespace cxlpool::devpool {
namespace {

using test::AlignedMemory;

LinkGeometry small_link() {
  LinkGeometry g;
  g.requests = {.slots = 64, .record_bytes = 56, .coherence = Coherence::kNonCoherent};
  g.completions = {.slots = 128, .record_bytes = 16, .coherence = Coherence::kNonCoherent};
  g.frontend_buffer_bytes = 64 << 10;
  g.backend_buffer_bytes = 32 << 10;
  return g;
}

bool inside(std::span<std::byte> part, std::span<std::byte> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

TEST(LinkTest, FormatAndOpen) {
  const LinkGeometry g = small_link();
  AlignedMemory mem(link_bytes(g));
  ASSERT_TRUE(format_link(mem.span(), g));
  auto view = open_link(mem.span());
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ(view->geometry.requests.slots, 64u);
  EXPECT_EQ(view->geometry.requests.record_bytes, 56u);
  EXPECT_EQ(view->geometry.completions.slots, 128u);
  EXPECT_EQ(view->geometry.completions.coherence, Coherence::kNonCoherent);
  EXPECT_EQ(view->frontend_buffers.size(), 64u << 10);
  EXPECT_EQ(view->backend_buffers.size(), 32u << 10);
  EXPECT_EQ(view->request_channel.size(), channel_bytes(g.requests));
  // Every area 4096-aligned from the link's start, in order, disjoint, inside.
  const std::span<std::byte> areas[] = {view->request_channel, view->completion_channel, view->frontend_buffers,
                                        view->backend_buffers};
  const std::byte* previous_end = mem.span().data() + 64;
  for (auto area : areas) {
    EXPECT_EQ((area.data() - mem.span().data()) % 4096, 0);
    EXPECT_GE(area.data(), previous_end);
    EXPECT_TRUE(inside(area, mem.span()));
    previous_end = area.data() + area.size();
  }
  // The channels inside are formatted and carry the link's geometry.
  auto requests = read_channel_header(view->request_channel);
  ASSERT_TRUE(requests);
  EXPECT_EQ(requests->record_bytes, 56u);
  auto producer = ChannelProducer<CoherentLines>::attach(view->completion_channel);
  auto consumer = ChannelConsumer<CoherentLines>::attach(view->completion_channel);
  ASSERT_TRUE(producer && consumer);
  std::byte rec[16], out[16];
  test::make_record(42, rec);
  ASSERT_TRUE(producer->push(rec));
  producer->flush();
  ASSERT_EQ(*consumer->poll(out, 1), 1u);
  EXPECT_EQ(*test::record_number(out), 42u);
}

TEST(LinkTest, ZeroSizedBufferAreas) {
  LinkGeometry g = small_link();
  g.frontend_buffer_bytes = 0;
  g.backend_buffer_bytes = 0;
  AlignedMemory mem(link_bytes(g));
  ASSERT_TRUE(format_link(mem.span(), g));
  auto view = open_link(mem.span());
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->frontend_buffers.empty());
  EXPECT_TRUE(view->backend_buffers.empty());
}

TEST(LinkTest, FormatRejectsBadGeometryAndRanges) {
  AlignedMemory mem(1 << 20);
  LinkGeometry g = small_link();
  g.frontend_buffer_bytes = 1000;
  EXPECT_EQ(format_link(mem.span(), g).error().code, EINVAL);
  g = small_link();
  g.requests.slots = 3;
  EXPECT_EQ(format_link(mem.span(), g).error().code, EINVAL);
  g = small_link();
  g.completions.record_bytes = 60;
  EXPECT_EQ(format_link(mem.span(), g).error().code, EINVAL);
  g = small_link();
  g.backend_buffer_bytes = uint64_t{1} << 50;
  EXPECT_EQ(format_link(mem.span(), g).error().code, EINVAL);
  g = small_link();
  EXPECT_EQ(format_link(mem.span().first(link_bytes(g) - 4096), g).error().code, EINVAL);
  EXPECT_EQ(format_link(mem.span().subspan(32), g).error().code, EINVAL);
}

TEST(LinkTest, HostileHeadersAreEproto) {
  const LinkGeometry g = small_link();
  AlignedMemory mem(link_bytes(g));
  struct Corruption {
    size_t offset;
    uint64_t value;
    size_t bytes;
  };
  const Corruption corruptions[] = {
      {0, 0, 4},                     // magic
      {4, 9, 2},                     // version
      {8, 5, 4},                     // request slots
      {12, 4, 4},                    // request record size
      {16, 0, 4},                    // completion slots
      {20, 200, 4},                  // completion record size
      {24, 3, 1},                    // request coherence
      {25, 0xff, 1},                 // completion coherence
      {32, 4095, 8},                 // frontend buffers not whole pages
      {40, ~uint64_t{0} & ~uint64_t{4095}, 8},  // backend buffers absurd (would overflow)
  };
  for (const auto& c : corruptions) {
    ASSERT_TRUE(format_link(mem.span(), g));
    std::memcpy(mem.span().data() + c.offset, &c.value, c.bytes);
    auto view = open_link(mem.span());
    ASSERT_FALSE(view) << "offset " << c.offset;
    EXPECT_EQ(view.error().code, EPROTO) << "offset " << c.offset;
  }
  // A header larger than the range is EINVAL, not a read past it.
  ASSERT_TRUE(format_link(mem.span(), g));
  auto short_range = open_link(mem.span().first(link_bytes(g) - 4096));
  ASSERT_FALSE(short_range);
  EXPECT_EQ(short_range.error().code, EINVAL);
  auto tiny = open_link(mem.span().first(16));
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code, EINVAL);
}

TEST(LinkTest, CheckedBufferBounds) {
  AlignedMemory mem(8192);
  auto area = mem.span().first(8192);
  auto whole = checked_buffer(area, 0, 8192);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->data(), area.data());
  EXPECT_EQ(whole->size(), 8192u);
  auto tail = checked_buffer(area, 8000, 192);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->data(), area.data() + 8000);
  auto empty_at_end = checked_buffer(area, 8192, 0);
  ASSERT_TRUE(empty_at_end);
  EXPECT_TRUE(empty_at_end->empty());
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const std::pair<uint64_t, uint64_t> bad[] = {
      {8192, 1}, {8193, 0}, {8000, 193}, {1, kMax}, {kMax, 1}, {kMax, kMax}, {kMax - 10, 20}, {0, 8193},
  };
  for (auto [offset, length] : bad) {
    auto r = checked_buffer(area, offset, length);
    ASSERT_FALSE(r) << offset << "+" << length;
    EXPECT_EQ(r.error().code, EBADMSG);
  }
  auto none = checked_buffer({}, 0, 0);
  ASSERT_TRUE(none);
  EXPECT_EQ(checked_buffer({}, 0, 1).error().code, EBADMSG);
}

}  // namespace
}  // namespace cxlpool::devpool
