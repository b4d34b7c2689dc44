// SPDX-License-Identifier: Apache-2.0
// The pod region: layout, header validation, table lines written by the
// allocator's writer and read back by an engine's reader (which calls the
// line-access policy as the protocol says), torn and hostile lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "cxlpool/devpool/pod_region.hpp"

namespace cxlpool::devpool {
namespace {

// Plain memory, with a count of each call, so the tests see the protocol.
struct CountingLines {
  struct Calls {
    int stores = 0, write_backs = 0, fences = 0, invalidates = 0, loads = 0;
  };
  Calls* calls = nullptr;
  void load(const void* line, void* out) {
    ++calls->loads;
    std::memcpy(out, line, kLineBytes);
  }
  void store(void* line, const void* in) {
    ++calls->stores;
    std::memcpy(line, in, kLineBytes);
  }
  void write_back(const void*) { ++calls->write_backs; }
  void fence() { ++calls->fences; }
  void invalidate(const void*) { ++calls->invalidates; }
};

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};

struct Region {
  explicit Region(size_t bytes)
      : memory(static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))), size(bytes) {}
  std::span<std::byte> span() { return {memory.get(), size}; }
  std::unique_ptr<std::byte, AlignedFree> memory;
  size_t size;
};

PodGeometry small_geometry() {
  PodGeometry g;
  g.max_devices = 4;
  g.max_attachments = 3;
  g.slot_bytes = 8192;
  g.coherence = Coherence::kNonCoherent;
  return g;
}

TEST(PodRegion, LayoutPutsSlotsOnPageBoundaries) {
  auto layout = pod_layout(small_geometry());
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->devices_offset, 64u);
  EXPECT_EQ(layout->attachments_offset, 64u + 4 * 64);
  EXPECT_EQ(layout->slots_offset, 4096u);
  EXPECT_EQ(layout->total_bytes, 4096u + 6 * 8192);
}

TEST(PodRegion, LayoutRejectsBadGeometry) {
  PodGeometry g = small_geometry();
  g.slot_bytes = 1000;
  EXPECT_EQ(pod_layout(g).error().code, EINVAL);
  g = small_geometry();
  g.max_attachments = 0;
  EXPECT_EQ(pod_layout(g).error().code, EINVAL);
  g = small_geometry();
  g.max_devices = kMaxPodDevices + 1;
  EXPECT_EQ(pod_layout(g).error().code, EINVAL);
}

TEST(PodRegion, HeaderRoundTripsAndIsChecked) {
  const PodGeometry g = small_geometry();
  Region r(pod_layout(g)->total_bytes);
  ASSERT_TRUE(format_pod(r.span(), g).has_value());
  auto read = read_pod_header(r.span());
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(*read, g);
  EXPECT_EQ(read_pod_header(r.span().first(r.size - 1)).error().code, EINVAL);
  EXPECT_EQ(format_pod(r.span().first(r.size - 1), g).error().code, EINVAL);
  r.span()[16] = std::byte{1};  // slot_bytes no longer a multiple of 4096
  EXPECT_EQ(read_pod_header(r.span()).error().code, EPROTO);
  r.span()[0] = std::byte{0};
  EXPECT_EQ(read_pod_header(r.span()).error().code, EPROTO);
}

TEST(PodRegion, SlotsAreInsideTheRegion) {
  const PodGeometry g = small_geometry();
  Region r(pod_layout(g)->total_bytes);
  ASSERT_TRUE(format_pod(r.span(), g).has_value());
  auto last = pod_slot(r.span(), g, g.link_slots() - 1);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->data() + last->size(), r.span().data() + r.size);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(last->data()) % 4096, 0u);
  EXPECT_EQ(pod_slot(r.span(), g, g.link_slots()).error().code, ERANGE);
}

TEST(PodRegion, WriterAndReaderFollowTheLineProtocol) {
  const PodGeometry g = small_geometry();
  Region r(pod_layout(g)->total_bytes);
  ASSERT_TRUE(format_pod(r.span(), g).has_value());
  CountingLines::Calls wcalls, rcalls;
  PodTableWriter<CountingLines> writer(r.span(), g, CountingLines{&wcalls});
  AttachmentLine line;
  line.generation = 3;
  line.attachment_id = 17;
  line.state = LineState::kInUse;
  line.active = 1;
  line.kind = 1;
  line.device[0] = 5;
  line.device[1] = 6;
  line.slot[0] = 2;
  line.slot[1] = 3;
  writer.write(1, line);
  EXPECT_EQ(wcalls.stores, 1);
  EXPECT_EQ(wcalls.write_backs, 1);
  EXPECT_EQ(wcalls.fences, 1);

  auto reader = PodTableReader<CountingLines>::open(r.span(), CountingLines{&rcalls});
  ASSERT_TRUE(reader.has_value());
  auto got = reader->attachment(1);
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_EQ(*got, line);
  EXPECT_EQ(got->active_slot(), 3u);
  EXPECT_EQ(got->active_device(), 6u);
  EXPECT_EQ(rcalls.invalidates, 1);  // before the read
  EXPECT_EQ(rcalls.loads, 1);
  // Untouched lines read as free.
  EXPECT_EQ(reader->attachment(0)->state, LineState::kFree);
  EXPECT_EQ(reader->attachment(g.max_attachments).error().code, ERANGE);

  DeviceLine dev{9, 5, LineState::kInUse, 0, 2};
  writer.write(3, dev);
  EXPECT_EQ(*reader->device(3), dev);
  EXPECT_EQ(reader->device(g.max_devices).error().code, ERANGE);
}

TEST(PodRegion, HalfWrittenLineIsRetriedThenEagain) {
  const PodGeometry g = small_geometry();
  Region r(pod_layout(g)->total_bytes);
  ASSERT_TRUE(format_pod(r.span(), g).has_value());
  CountingLines::Calls calls;
  PodTableWriter<CountingLines> writer(r.span(), g, CountingLines{&calls});
  AttachmentLine line;
  line.generation = 1;
  line.attachment_id = 2;
  line.state = LineState::kInUse;
  writer.write(0, line);
  // A newer generation at the start of the line, the old seal at its end.
  const uint32_t newer = 2;
  std::memcpy(r.span().data() + pod_layout(g)->attachments_offset, &newer, sizeof newer);
  auto reader = PodTableReader<CountingLines>::open(r.span(), CountingLines{&calls});
  auto got = reader->attachment(0);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, EAGAIN);
  EXPECT_EQ(calls.loads, PodTableReader<CountingLines>::kReadTries);
}

TEST(PodRegion, HostileLinesAreRejected) {
  const PodGeometry g = small_geometry();
  AttachmentLine line;
  line.generation = 1;
  line.attachment_id = 2;
  line.state = LineState::kInUse;
  alignas(64) std::byte buf[kLineBytes];
  line.slot[1] = g.link_slots();
  encode_line(line, buf);
  EXPECT_EQ(decode_attachment_line(buf, g).error().code, EPROTO);
  line.slot[1] = 0;
  line.active = 2;
  encode_line(line, buf);
  EXPECT_EQ(decode_attachment_line(buf, g).error().code, EPROTO);
  line.active = 0;
  line.kind = 7;
  encode_line(line, buf);
  EXPECT_EQ(decode_attachment_line(buf, g).error().code, EPROTO);
  DeviceLine dev{1, 1, LineState::kInUse, 0, 9};
  encode_line(dev, buf);
  EXPECT_EQ(decode_device_line(buf).error().code, EPROTO);
}

}  // namespace
}  // namespace cxlpool::devpool

namespace cxlpool::devpool {
namespace {

TEST(PodRegion, OneSlotSizeHoldsALinkOfEitherKind) {
  const uint64_t slot = pod_slot_bytes(1 << 20);
  EXPECT_EQ(slot % 4096, 0u);
  for (DeviceKind kind : {DeviceKind::kNet, DeviceKind::kBlk}) {
    const LinkGeometry g = pod_link_geometry(kind, 1 << 20, Coherence::kCoherent);
    EXPECT_LE(link_bytes(g), slot);
    EXPECT_EQ(g.frontend_buffer_bytes, 1u << 20);
  }
  EXPECT_EQ(pod_link_geometry(DeviceKind::kBlk, 4096, Coherence::kCoherent).requests.record_bytes, 56u);
  EXPECT_EQ(pod_link_geometry(DeviceKind::kNet, 4096, Coherence::kNonCoherent).requests.coherence,
            Coherence::kNonCoherent);

  // A formatted slot opens as a link.
  PodGeometry pg;
  pg.max_devices = 1;
  pg.max_attachments = 1;
  pg.slot_bytes = pod_slot_bytes(4096);
  const size_t total = pod_layout(pg)->total_bytes;
  std::unique_ptr<std::byte, AlignedFree> memory(static_cast<std::byte*>(std::aligned_alloc(4096, total)));
  std::span<std::byte> region(memory.get(), total);
  ASSERT_TRUE(format_pod(region, pg).has_value());
  auto s1 = pod_slot(region, pg, 1);
  ASSERT_TRUE(s1.has_value());
  ASSERT_TRUE(format_link(*s1, pod_link_geometry(DeviceKind::kBlk, 4096, Coherence::kCoherent)).has_value());
  auto view = open_link(*s1);
  ASSERT_TRUE(view.has_value()) << view.error().message;
  EXPECT_EQ(view->geometry.requests.record_bytes, 56u);
}

}  // namespace
}  // namespace cxlpool::devpool
