// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for what a device channel's consumer reads from shared
// memory another host writes: the input is a whole channel image (header,
// consumer line, slots) and, read another way, a link header. Properties: a
// bad image is refused at attach with EPROTO or EINVAL; an attached consumer
// polls without reading outside the image, returns only whole records, at
// most one lap of them (nobody writes), and a malformed slot is EPROTO that
// sticks; open_link's areas lie inside the image.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "cxlpool/devpool/channel.hpp"
#include "cxlpool/devpool/link.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_devpool_decode";

using cxlpool::fuzz::accepted;
using cxlpool::fuzz::violated;

namespace {

using namespace cxlpool::devpool;

bool inside(std::span<std::byte> part, std::span<std::byte> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void poll_channel(std::span<std::byte> image) {
  auto consumer = ChannelConsumer<CoherentLines>::attach(image);
  if (!accepted(consumer, {EPROTO, EINVAL})) return;
  const ChannelGeometry g = consumer->geometry();
  if (channel_bytes(g) > image.size()) violated("attached to a channel larger than its memory", "");
  const uint64_t lap = uint64_t{g.slots} * g.records_per_slot();
  std::vector<std::byte> out(size_t{g.record_bytes} * 7);
  uint64_t total = 0;
  for (;;) {
    auto n = consumer->poll(out.data(), 7);
    if (!n) {
      if (n.error().code != EPROTO) violated("poll failed with an undocumented errno", n.error().message);
      if (!consumer->broken()) violated("EPROTO without marking the channel broken", "");
      if (consumer->poll(out.data(), 7)) violated("a broken channel polled again", "");
      return;
    }
    if (*n > 7) violated("poll returned more records than asked for", "");
    if (*n == 0) break;
    total += *n;
    if (total > lap) violated("more than one lap of records from an idle producer", "");
  }
  if (consumer->records_consumed() != total) violated("records_consumed differs from what poll returned", "");
}

void open_as_link(std::span<std::byte> image) {
  auto view = open_link(image);
  if (!accepted(view, {EPROTO, EINVAL})) return;
  for (auto area : {view->request_channel, view->completion_channel, view->frontend_buffers, view->backend_buffers}) {
    if (!inside(area, image)) violated("a link area outside the memory", "");
  }
  poll_channel(view->request_channel);
  poll_channel(view->completion_channel);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The image in memory of exactly its size (64-byte aligned: what a
  // channel needs), so a read past it is an out-of-bounds read.
  std::unique_ptr<std::byte, decltype(&std::free)> memory(
      static_cast<std::byte*>(std::aligned_alloc(64, (size + 63) / 64 * 64 + 64)), &std::free);
  std::memcpy(memory.get(), data, size);
  std::span<std::byte> image(memory.get(), size);
  poll_channel(image);
  std::memcpy(memory.get(), data, size);
  open_as_link(image);
  return 0;
}
