// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "cxlpool/devpool/net/buffer_pool.hpp"
#include "cxlpool/devpool/net/steering.hpp"
#include "net_engines.hpp"

namespace cxlpool::devpool_tool {
namespace {

// Received frames for a frontend whose completion backlog is this long are
// dropped (it is not keeping up), as a NIC drops on a full ring. Credits
// are never dropped.
constexpr size_t kMaxRxBacklog = 512;

template <class Lines>
struct ServedLink {
  ServedLink(uint64_t key_, const devpool::LinkView& link, devpool::ChannelConsumer<Lines> consumer,
             devpool::ChannelProducer<Lines> producer)
      : key(key_),
        requests(std::move(consumer)),
        completions(std::move(producer)),
        frontend_area(link.frontend_buffers),
        backend_area(link.backend_buffers),
        rx_pool(backend_area.size()) {}

  uint64_t key;  // the caller's name for the link (its pod slot, or its place on the command line)
  devpool::ChannelConsumer<Lines> requests;
  Outbox<Lines> completions;
  std::span<std::byte> frontend_area;
  std::span<std::byte> backend_area;
  BufferPool rx_pool;
  // Frames taken from the request channel that the port has not sent yet
  // (it was busy); they go before any new ones.
  std::vector<Descriptor> tx_waiting;
  // What its frontend announced: steering is rebuilt from these when a
  // link goes away.
  std::vector<uint64_t> macs;
};

template <class Lines>
class Backend {
 public:
  explicit Backend(hal::NetPort& port) : port_(port), steering_(0) {}

  // Serves a freshly formatted link from now on.
  Result<void> add(uint64_t key, const devpool::LinkView& link) {
    auto consumer = devpool::ChannelConsumer<Lines>::attach(link.request_channel);
    if (!consumer) return tl::unexpected(consumer.error());
    auto producer = devpool::ChannelProducer<Lines>::attach(link.completion_channel);
    if (!producer) return tl::unexpected(producer.error());
    links_.push_back(std::make_unique<ServedLink<Lines>>(key, link, std::move(*consumer), std::move(*producer)));
    rebuild_steering();
    return {};
  }

  // Stops serving a link (its attachment moved or ended): frames still in
  // it are dropped, its frontend's addresses are no longer steered here.
  void remove(uint64_t key) {
    std::erase_if(links_, [key](const auto& link) { return link->key == key; });
    rebuild_steering();
  }

  Result<BackendCounters> run(const EngineTiming& timing, BackendLinkSource* source) {
    IdleBackoff backoff(timing);
    LinkChange change;
    while (!stop_requested().load(std::memory_order_relaxed)) {
      if (source != nullptr) {
        change.added.clear();
        change.removed.clear();
        auto changed = source->poll(counters_, change);
        if (!changed) return tl::unexpected(changed.error());
        for (uint64_t key : change.removed) remove(key);
        for (const auto& [key, view] : change.added) {
          auto added = add(key, view);
          if (!added) return tl::unexpected(added.error());
        }
      }
      bool work = false;
      for (size_t i = 0; i < links_.size(); ++i) {
        auto did = serve_requests(i);
        if (!did) return tl::unexpected(did.error());
        work |= *did;
      }
      auto received = receive();
      if (!received) return tl::unexpected(received.error());
      work |= *received;
      for (auto& link : links_) work |= link->completions.flush();
      if (work) {
        backoff.busy();
      } else {
        pollfd fd{port_.poll_fd(), static_cast<short>(landing() != nullptr ? POLLIN : 0), 0};
        backoff.idle(std::span(&fd, 1));
      }
    }
    return counters_;
  }

 private:
  // Frames to send, credits for our buffers, announcements.
  Result<bool> serve_requests(size_t index) {
    ServedLink<Lines>& link = *links_[index];
    bool work = false;
    if (link.tx_waiting.empty()) {
      auto got = link.requests.poll(records_.data(), kEngineBatch);
      if (!got) return tl::unexpected(got.error());
      work = *got > 0;
      for (uint32_t i = 0; i < *got; ++i) {
        auto d = devpool::net::decode_descriptor(records_.data() + i * kDescriptorBytes);
        if (!d) return tl::unexpected(d.error());
        switch (d->kind) {
          case DescriptorKind::kFrame: link.tx_waiting.push_back(*d); break;
          case DescriptorKind::kCredit: {
            auto released = link.rx_pool.release(d->offset);
            if (!released) return tl::unexpected(released.error());
            break;
          }
          case DescriptorKind::kAnnounce: {
            steering_.announce(index, d->cookie);
            if (std::find(link.macs.begin(), link.macs.end(), d->cookie) == link.macs.end()) {
              link.macs.push_back(d->cookie);
            }
            auto added = port_.add_address(hal::MacAddress::from_u64(d->cookie));
            if (!added && added.error().code != ENOTSUP) return tl::unexpected(added.error());
            break;
          }
        }
      }
    }
    if (link.tx_waiting.empty()) return work;
    // Sent straight from the frontend's buffers: no copy of ours.
    std::array<hal::TxFrame, kEngineBatch> frames;
    for (size_t i = 0; i < link.tx_waiting.size(); ++i) {
      auto bytes = devpool::net::frame_bytes(link.frontend_area, link.tx_waiting[i]);
      if (!bytes) return tl::unexpected(bytes.error());
      acquire_bytes(link.requests.lines(), bytes->data(), bytes->size());
      frames[i] = {bytes->data(), static_cast<uint32_t>(bytes->size())};
    }
    auto sent = port_.send(std::span(frames.data(), link.tx_waiting.size()));
    if (!sent) return tl::unexpected(sent.error());
    for (size_t i = 0; i < *sent; ++i) {
      link.completions.send(Descriptor::credit(link.tx_waiting[i].offset));
      counters_.tx_bytes += link.tx_waiting[i].length;
    }
    counters_.tx_frames += *sent;
    link.tx_waiting.erase(link.tx_waiting.begin(), link.tx_waiting.begin() + static_cast<ptrdiff_t>(*sent));
    return work || *sent > 0;
  }

  // The link whose backend area frames land in: the one with the most free
  // buffers (with one frontend, always its own, so no copy).
  ServedLink<Lines>* landing() {
    ServedLink<Lines>* best = nullptr;
    for (auto& link : links_) {
      if (link->rx_pool.available() > 0 && (best == nullptr || link->rx_pool.available() > best->rx_pool.available()))
        best = link.get();
    }
    return best;
  }

  Result<bool> receive() {
    ServedLink<Lines>* land = landing();
    if (land == nullptr) return false;
    std::array<hal::RxFrame, kEngineBatch> rx;
    std::array<uint32_t, kEngineBatch> offsets;
    size_t lent = 0;
    for (; lent < kEngineBatch; ++lent) {
      auto offset = land->rx_pool.allocate();
      if (!offset) break;
      offsets[lent] = *offset;
      rx[lent] = {land->backend_area.data() + *offset, kNetBufferBytes};
    }
    auto got = port_.receive(std::span(rx.data(), lent));
    if (!got) {
      for (size_t i = 0; i < lent; ++i) land->rx_pool.put_back(offsets[i]);
      return tl::unexpected(got.error());
    }
    for (size_t i = 0; i < *got; ++i) {
      if (rx[i].truncated) {
        ++counters_.rx_truncated;
        land->rx_pool.put_back(offsets[i]);
        continue;
      }
      steer(*land, offsets[i], rx[i].length);
    }
    for (size_t i = *got; i < lent; ++i) land->rx_pool.put_back(offsets[i]);
    return *got > 0;
  }

  void rebuild_steering() {
    steering_ = devpool::net::MacSteering(links_.size());
    for (size_t i = 0; i < links_.size(); ++i) {
      for (uint64_t mac : links_[i]->macs) steering_.announce(i, mac);
    }
  }

  void steer(ServedLink<Lines>& land, uint32_t offset, uint32_t length) {
    ++counters_.rx_frames;
    counters_.rx_bytes += length;
    const std::byte* frame = land.backend_area.data() + offset;
    const uint64_t destination = devpool::net::destination_mac(std::span(frame, length));
    bool landed_used = false;
    auto deliver = [&](ServedLink<Lines>& to) {
      if (to.completions.backlog() >= kMaxRxBacklog) {
        ++counters_.rx_no_buffer;
        return;
      }
      uint32_t at = offset;
      if (&to != &land || landed_used) {
        auto copy = to.rx_pool.allocate();
        if (!copy) {
          ++counters_.rx_no_buffer;
          return;
        }
        at = *copy;
        std::memcpy(to.backend_area.data() + at, frame, length);
        ++counters_.rx_copied;
      } else {
        landed_used = true;
      }
      publish_bytes(to.completions.lines(), to.backend_area.data() + at, length);
      to.completions.send(Descriptor::frame(at, static_cast<uint16_t>(length)));
    };
    if (devpool::net::MacSteering::is_group(destination)) {
      // The landing link last, so the others copy from a buffer still ours.
      for (auto& link : links_) {
        if (link.get() != &land) deliver(*link);
      }
      deliver(land);
    } else if (auto index = steering_.unicast(destination)) {
      deliver(*links_[*index]);
    } else {
      ++counters_.rx_unknown;
    }
    if (!landed_used) land.rx_pool.put_back(offset);
  }

  hal::NetPort& port_;
  devpool::net::MacSteering steering_;
  std::vector<std::unique_ptr<ServedLink<Lines>>> links_;
  BackendCounters counters_;
  std::array<std::byte, kDescriptorBytes * kEngineBatch> records_;
};

template <class Lines>
Result<BackendCounters> serve(std::vector<MappedLink>& links, hal::NetPort& port, const EngineTiming& timing,
                              BackendLinkSource* source) {
  Backend<Lines> backend(port);
  for (size_t i = 0; i < links.size(); ++i) {
    auto added = backend.add(i, links[i].view);
    if (!added) return tl::unexpected(added.error());
  }
  return backend.run(timing, source);
}

// Checks what a link source hands over before the loop attaches to it.
class CheckedSource : public BackendLinkSource {
 public:
  CheckedSource(BackendLinkSource& inner, devpool::Coherence coherence) : inner_(inner), coherence_(coherence) {}
  Result<bool> poll(const BackendCounters& counters, LinkChange& change) override {
    auto changed = inner_.poll(counters, change);
    if (!changed || !*changed) return changed;
    for (const auto& added : change.added) {
      if (auto ok = check_net_geometry(added.second.geometry, coherence_); !ok) return tl::unexpected(ok.error());
    }
    return true;
  }

 private:
  BackendLinkSource& inner_;
  devpool::Coherence coherence_;
};

}  // namespace

Result<BackendCounters> run_net_backend(std::vector<MappedLink>& links, hal::NetPort& port,
                                        const EngineTiming& timing) {
  if (links.empty()) return fail(EINVAL, "net backend: no link to serve");
  const devpool::Coherence coherence = links.front().view.geometry.requests.coherence;
  for (const MappedLink& link : links) {
    if (auto ok = check_net_geometry(link.view.geometry, coherence); !ok) return tl::unexpected(ok.error());
  }
  if (coherence == devpool::Coherence::kNonCoherent) {
    return serve<devpool::NonCoherentLines>(links, port, timing, nullptr);
  }
  return serve<devpool::CoherentLines>(links, port, timing, nullptr);
}

Result<BackendCounters> run_net_backend(devpool::Coherence coherence, hal::NetPort& port, const EngineTiming& timing,
                                        BackendLinkSource& source) {
  std::vector<MappedLink> none;
  CheckedSource checked(source, coherence);
  if (coherence == devpool::Coherence::kNonCoherent) {
    return serve<devpool::NonCoherentLines>(none, port, timing, &checked);
  }
  return serve<devpool::CoherentLines>(none, port, timing, &checked);
}

}  // namespace cxlpool::devpool_tool
