// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "cxlpool/devpool/net/buffer_pool.hpp"
#include "net_engines.hpp"

namespace cxlpool::devpool_tool {
namespace {

// Frames read from the TAP wait here when the request ring is full; past
// this the TAP is left unread (the host's own queue holds them).
constexpr size_t kMaxBacklog = 256;
constexpr size_t kGratuitousArpBytes = 60;  // the Ethernet minimum, padded

// One link of the frontend: its side of both channels and its TX buffers.
template <class Lines>
struct Leg {
  Leg(const devpool::LinkView& view, devpool::ChannelProducer<Lines> producer,
      devpool::ChannelConsumer<Lines> consumer)
      : requests(std::move(producer)),
        completions(std::move(consumer)),
        tx_area(view.frontend_buffers),
        rx_area(view.backend_buffers),
        tx_pool(tx_area.size()) {}

  Outbox<Lines> requests;
  devpool::ChannelConsumer<Lines> completions;
  std::span<std::byte> tx_area;
  std::span<std::byte> rx_area;
  BufferPool tx_pool;
};

template <class Lines>
class Frontend {
 public:
  Frontend(TapDevice& tap, const hal::MacAddress& mac, devpool::Coherence coherence)
      : tap_(tap), mac_(mac), coherence_(coherence) {}

  // Attaches to a freshly formatted link and announces our MAC on it, so its
  // backend steers frames for us even while the leg only stands by.
  Result<void> attach(int index, const devpool::LinkView& view) {
    auto producer = devpool::ChannelProducer<Lines>::attach(view.request_channel);
    if (!producer) return tl::unexpected(producer.error());
    auto consumer = devpool::ChannelConsumer<Lines>::attach(view.completion_channel);
    if (!consumer) return tl::unexpected(consumer.error());
    legs_[index] = std::make_unique<Leg<Lines>>(view, std::move(*producer), std::move(*consumer));
    legs_[index]->requests.send(Descriptor::announce(mac_.to_u64()));
    legs_[index]->requests.flush();
    return {};
  }

  Result<FrontendCounters> run(const EngineTiming& timing, FrontendLinkSource* source) {
    IdleBackoff backoff(timing);
    FrontendLegs plan;
    while (!stop_requested().load(std::memory_order_relaxed)) {
      if (source != nullptr) {
        auto changed = source->poll(plan);
        if (!changed) return tl::unexpected(changed.error());
        if (*changed) {
          if (auto ok = apply(plan); !ok) return tl::unexpected(ok.error());
        }
      }
      bool work = false;
      for (int i = 0; i < 2; ++i) {
        if (!legs_[i]) continue;
        auto got = receive(*legs_[i], i == active_);
        if (!got) return tl::unexpected(got.error());
        work |= *got;
      }
      Leg<Lines>* tx = legs_[active_].get();
      if (tx != nullptr) {
        auto sent = transmit(*tx);
        if (!sent) return tl::unexpected(sent.error());
        work |= *sent;
      }
      for (auto& leg : legs_) {
        if (leg) work |= leg->requests.flush();
      }
      if (work) {
        backoff.busy();
      } else {
        // Wait for the TAP only while there is a buffer to read into and room
        // to queue what is read.
        const bool room = tx != nullptr && tx->tx_pool.available() > 0 && tx->requests.backlog() < kMaxBacklog;
        pollfd fd{tap_.fd(), static_cast<short>(room ? POLLIN : 0), 0};
        backoff.idle(std::span(&fd, 1));
      }
    }
    return counters_;
  }

 private:
  Result<void> apply(const FrontendLegs& plan) {
    for (int i = 0; i < 2; ++i) {
      if (!plan.leg[i].present) {
        legs_[i].reset();
      } else if (plan.leg[i].fresh || !legs_[i]) {
        if (auto ok = check_net_geometry(plan.leg[i].view.geometry, coherence_); !ok) return ok;
        if (auto ok = attach(i, plan.leg[i].view); !ok) return ok;
      }
    }
    if (!planned_) {
      planned_ = true;
      active_ = plan.active & 1;
    } else if ((plan.active & 1) != active_) {
      active_ = plan.active & 1;
      ++counters_.switches;
      if (legs_[active_]) announce_move(*legs_[active_]);
    }
    return {};
  }

  // Received frames (written to the TAP when `deliver`), and credits for
  // frames we sent.
  Result<bool> receive(Leg<Lines>& leg, bool deliver) {
    auto got = leg.completions.poll(records_.data(), kEngineBatch);
    if (!got) return tl::unexpected(got.error());
    for (uint32_t i = 0; i < *got; ++i) {
      auto d = devpool::net::decode_descriptor(records_.data() + i * kDescriptorBytes);
      if (!d) return tl::unexpected(d.error());
      if (d->kind == DescriptorKind::kCredit) {
        auto released = leg.tx_pool.release(d->offset);
        if (!released) return tl::unexpected(released.error());
        continue;
      }
      if (d->kind != DescriptorKind::kFrame) return fail(EBADMSG, "net: the backend sent an announcement");
      auto frame = devpool::net::frame_bytes(leg.rx_area, *d);
      if (!frame) return tl::unexpected(frame.error());
      if (deliver) {
        acquire_bytes(leg.completions.lines(), frame->data(), frame->size());
        if (::write(tap_.fd(), frame->data(), frame->size()) < 0) ++counters_.rx_tap_errors;
        ++counters_.rx_frames;
      } else {
        ++counters_.rx_other_leg;
      }
      leg.requests.send(Descriptor::credit(d->offset));
    }
    return *got > 0;
  }

  // Frames the host sends, read straight into our buffers of the link.
  Result<bool> transmit(Leg<Lines>& leg) {
    bool work = false;
    for (uint32_t n = 0; n < kEngineBatch && leg.requests.backlog() < kMaxBacklog; ++n) {
      auto offset = leg.tx_pool.allocate();
      if (!offset) {
        ++counters_.tx_no_buffer;
        break;
      }
      std::byte* buffer = leg.tx_area.data() + *offset;
      const ssize_t bytes = ::read(tap_.fd(), buffer, kNetBufferBytes);
      if (bytes < static_cast<ssize_t>(devpool::net::kMinFrameBytes)) {
        leg.tx_pool.put_back(*offset);
        if (bytes < 0 && errno != EAGAIN && errno != EINTR) return fail_errno("read " + tap_.name());
        break;
      }
      learn_address(std::span(buffer, static_cast<size_t>(bytes)));
      publish_bytes(leg.requests.lines(), buffer, static_cast<size_t>(bytes));
      leg.requests.send(Descriptor::frame(*offset, static_cast<uint16_t>(bytes)));
      ++counters_.tx_frames;
      work = true;
    }
    return work;
  }

  // The IPv4 address this host sends from, from its own frames: what a
  // gratuitous ARP announces after a move.
  void learn_address(std::span<const std::byte> frame) {
    if (frame.size() < 42 || std::memcmp(frame.data() + 6, mac_.bytes.data(), 6) != 0) return;
    const auto type = (static_cast<uint16_t>(frame[12]) << 8) | static_cast<uint16_t>(frame[13]);
    size_t at = 0;
    if (type == 0x0800 && (static_cast<uint8_t>(frame[14]) >> 4) == 4) at = 26;  // IPv4 source
    if (type == 0x0806) at = 28;                                               // ARP sender address
    if (at == 0) return;
    std::array<std::byte, 4> ip;
    std::memcpy(ip.data(), frame.data() + at, 4);
    if (ip != std::array<std::byte, 4>{}) ipv4_ = ip;
  }

  // A gratuitous ARP request (sender and target: our address) from our MAC
  // through the new leg: the switch learns the MAC's new port from its
  // source, the neighbours refresh their entries. Without a known address
  // it is an ARP probe (sender 0.0.0.0), which teaches the switch as well.
  void announce_move(Leg<Lines>& leg) {
    auto offset = leg.tx_pool.allocate();
    if (!offset) return;
    std::byte* f = leg.tx_area.data() + *offset;
    std::memset(f, 0, kGratuitousArpBytes);
    std::memset(f, 0xff, 6);
    std::memcpy(f + 6, mac_.bytes.data(), 6);
    const uint8_t header[10] = {0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01};
    std::memcpy(f + 12, header, sizeof(header));
    std::memcpy(f + 22, mac_.bytes.data(), 6);
    const std::array<std::byte, 4> ip = ipv4_.value_or(std::array<std::byte, 4>{});
    std::memcpy(f + 28, ip.data(), 4);
    std::memcpy(f + 38, ip.data(), 4);
    publish_bytes(leg.requests.lines(), f, kGratuitousArpBytes);
    leg.requests.send(Descriptor::frame(*offset, static_cast<uint16_t>(kGratuitousArpBytes)));
    leg.requests.flush();
    ++counters_.tx_frames;
  }

  TapDevice& tap_;
  hal::MacAddress mac_;
  devpool::Coherence coherence_;
  std::unique_ptr<Leg<Lines>> legs_[2];
  int active_ = 0;
  bool planned_ = false;  // the source has given the legs once
  std::optional<std::array<std::byte, 4>> ipv4_;
  FrontendCounters counters_;
  std::array<std::byte, kDescriptorBytes * kEngineBatch> records_;
};

template <class Lines>
Result<FrontendCounters> run_direct(MappedLink& link, TapDevice& tap, const hal::MacAddress& mac,
                                    const EngineTiming& timing) {
  Frontend<Lines> frontend(tap, mac, link.view.geometry.requests.coherence);
  if (auto ok = frontend.attach(0, link.view); !ok) return tl::unexpected(ok.error());
  return frontend.run(timing, nullptr);
}

template <class Lines>
Result<FrontendCounters> run_legs(devpool::Coherence coherence, FrontendLinkSource& source, TapDevice& tap, const hal::MacAddress& mac,
                                  const EngineTiming& timing) {
  Frontend<Lines> frontend(tap, mac, coherence);
  return frontend.run(timing, &source);
}

}  // namespace

Result<FrontendCounters> run_net_frontend(MappedLink& link, TapDevice& tap, const hal::MacAddress& mac,
                                          const EngineTiming& timing) {
  const auto coherence = link.view.geometry.requests.coherence;
  if (auto ok = check_net_geometry(link.view.geometry, coherence); !ok) return tl::unexpected(ok.error());
  if (coherence == devpool::Coherence::kNonCoherent) {
    return run_direct<devpool::NonCoherentLines>(link, tap, mac, timing);
  }
  return run_direct<devpool::CoherentLines>(link, tap, mac, timing);
}

Result<FrontendCounters> run_net_frontend(devpool::Coherence coherence, FrontendLinkSource& source, TapDevice& tap,
                                          const hal::MacAddress& mac, const EngineTiming& timing) {
  if (coherence == devpool::Coherence::kNonCoherent) {
    return run_legs<devpool::NonCoherentLines>(coherence, source, tap, mac, timing);
  }
  return run_legs<devpool::CoherentLines>(coherence, source, tap, mac, timing);
}

}  // namespace cxlpool::devpool_tool
