// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <array>
#include <cerrno>

#include "cxlpool/devpool/net/buffer_pool.hpp"
#include "net_engines.hpp"

namespace cxlpool::devpool_tool {
namespace {

// Frames read from the TAP wait here when the request ring is full; past
// this the TAP is left unread (the host's own queue holds them).
constexpr size_t kMaxBacklog = 256;

template <class Lines>
Result<FrontendCounters> run(MappedLink& link, TapDevice& tap, const hal::MacAddress& mac, const EngineTiming& timing) {
  auto producer = devpool::ChannelProducer<Lines>::attach(link.view.request_channel);
  if (!producer) return tl::unexpected(producer.error());
  auto consumer = devpool::ChannelConsumer<Lines>::attach(link.view.completion_channel);
  if (!consumer) return tl::unexpected(consumer.error());
  Outbox<Lines> requests(std::move(*producer));
  const std::span<std::byte> tx_area = link.view.frontend_buffers;
  const std::span<std::byte> rx_area = link.view.backend_buffers;
  BufferPool tx_pool(tx_area.size());
  FrontendCounters counters;
  IdleBackoff backoff(timing);
  std::array<std::byte, kDescriptorBytes * kEngineBatch> records;

  requests.send(Descriptor::announce(mac.to_u64()));
  requests.flush();
  while (!stop_requested().load(std::memory_order_relaxed)) {
    bool work = false;
    // Received frames, and credits for frames we sent.
    auto got = consumer->poll(records.data(), kEngineBatch);
    if (!got) return tl::unexpected(got.error());
    for (uint32_t i = 0; i < *got; ++i) {
      auto d = devpool::net::decode_descriptor(records.data() + i * kDescriptorBytes);
      if (!d) return tl::unexpected(d.error());
      if (d->kind == DescriptorKind::kCredit) {
        auto released = tx_pool.release(d->offset);
        if (!released) return tl::unexpected(released.error());
        continue;
      }
      if (d->kind != DescriptorKind::kFrame) return fail(EBADMSG, "net: the backend sent an announcement");
      auto frame = devpool::net::frame_bytes(rx_area, *d);
      if (!frame) return tl::unexpected(frame.error());
      acquire_bytes(consumer->lines(), frame->data(), frame->size());
      if (::write(tap.fd(), frame->data(), frame->size()) < 0) ++counters.rx_tap_errors;
      ++counters.rx_frames;
      requests.send(Descriptor::credit(d->offset));
    }
    work |= *got > 0;
    // Frames the host sends, read straight into our buffers of the link.
    for (uint32_t n = 0; n < kEngineBatch && requests.backlog() < kMaxBacklog; ++n) {
      auto offset = tx_pool.allocate();
      if (!offset) {
        ++counters.tx_no_buffer;
        break;
      }
      std::byte* buffer = tx_area.data() + *offset;
      const ssize_t bytes = ::read(tap.fd(), buffer, kNetBufferBytes);
      if (bytes < static_cast<ssize_t>(devpool::net::kMinFrameBytes)) {
        tx_pool.put_back(*offset);
        if (bytes < 0 && errno != EAGAIN && errno != EINTR) return fail_errno("read " + tap.name());
        break;
      }
      publish_bytes(requests.lines(), buffer, static_cast<size_t>(bytes));
      requests.send(Descriptor::frame(*offset, static_cast<uint16_t>(bytes)));
      ++counters.tx_frames;
      work = true;
    }
    work |= requests.flush();
    if (work) {
      backoff.busy();
    } else {
      // Wait for the TAP only while there is a buffer to read into and room
      // to queue what is read.
      pollfd fd{tap.fd(), static_cast<short>(tx_pool.available() > 0 && requests.backlog() < kMaxBacklog ? POLLIN : 0),
                0};
      backoff.idle(std::span(&fd, 1));
    }
  }
  return counters;
}

}  // namespace

Result<FrontendCounters> run_net_frontend(MappedLink& link, TapDevice& tap, const hal::MacAddress& mac,
                                          const EngineTiming& timing) {
  const auto& g = link.view.geometry;
  if (g.requests.record_bytes != kDescriptorBytes || g.completions.record_bytes != kDescriptorBytes) {
    return fail(EPROTO, "net: the link's channels do not carry 16-byte descriptors");
  }
  if (g.requests.coherence != g.completions.coherence) return fail(EPROTO, "net: channels of mixed coherence");
  if (g.requests.coherence == devpool::Coherence::kNonCoherent) {
    return run<devpool::NonCoherentLines>(link, tap, mac, timing);
  }
  return run<devpool::CoherentLines>(link, tap, mac, timing);
}

}  // namespace cxlpool::devpool_tool
