// SPDX-License-Identifier: Apache-2.0
// What the net engines' loops share: the producer side of a channel with a
// queue behind it (credits must never be lost when the ring is full), the
// busy-poll-then-sleep pacing, and making buffer contents visible across
// non-coherent shared memory.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>

#include "cxlpool/devpool/channel.hpp"
#include "cxlpool/devpool/line_access.hpp"
#include "cxlpool/devpool/net/buffer_pool.hpp"
#include "cxlpool/devpool/net/descriptor.hpp"

namespace cxlpool::devpool_tool {

using devpool::net::BufferPool;
using devpool::net::Descriptor;
using devpool::net::DescriptorKind;
using devpool::net::kDescriptorBytes;
using devpool::net::kNetBufferBytes;

// Descriptors or frames an engine takes from one source per pass: enough to
// amortize the pass, few enough to alternate between directions and links.
inline constexpr uint32_t kEngineBatch = 64;

struct EngineTiming {
  // Keep polling this long after the last work before sleeping: a reply
  // that comes back within it crosses the channel without a wake-up delay.
  std::chrono::microseconds spin{200};
  // Sleeps start at `first_sleep` and double up to `max_sleep`; the channel
  // has no descriptor to wait on, so this bounds the latency of a packet
  // that arrives on the channel side of a sleeping engine.
  std::chrono::microseconds first_sleep{5};
  std::chrono::microseconds max_sleep{1000};
};

class IdleBackoff {
 public:
  explicit IdleBackoff(const EngineTiming& timing) : timing_(timing), sleep_(timing.first_sleep) {}

  // Work was done this pass.
  void busy() {
    idle_since_ = {};
    sleep_ = timing_.first_sleep;
  }
  // Nothing was done: polls on while within the spin window, then waits on
  // `fds` (readable) for the current sleep, which grows.
  void idle(std::span<pollfd> fds);

 private:
  EngineTiming timing_;
  std::chrono::steady_clock::time_point idle_since_{};
  std::chrono::microseconds sleep_{};
};

// Writes back every line of [data, data + bytes) and fences, so a peer on
// non-coherent memory reads what was written (no-ops when coherent).
template <class Lines>
void publish_bytes(Lines& lines, const std::byte* data, std::size_t bytes) {
  for (std::size_t off = 0; off < bytes; off += devpool::kLineBytes) lines.write_back(data + off);
  lines.fence();
}

// Drops cached copies of [data, data + bytes) before reading what the peer
// wrote there (no-op when coherent).
template <class Lines>
void acquire_bytes(Lines& lines, const std::byte* data, std::size_t bytes) {
  for (std::size_t off = 0; off < bytes; off += devpool::kLineBytes) lines.invalidate(data + off);
}

// A channel producer of net descriptors. send() never loses a record: what
// the ring cannot take waits here, in order, for flush().
template <class Lines>
class Outbox {
 public:
  explicit Outbox(devpool::ChannelProducer<Lines> producer) : producer_(std::move(producer)) {}

  void send(const devpool::net::Descriptor& d) {
    if (waiting_.empty() && push(d)) return;
    waiting_.push_back(d);
  }
  // Publishes what was queued; true when something went out.
  bool flush() {
    bool moved = false;
    while (!waiting_.empty() && push(waiting_.front())) {
      waiting_.pop_front();
      moved = true;
    }
    return producer_.flush() > 0 || moved;
  }
  std::size_t backlog() const { return waiting_.size(); }
  Lines& lines() { return producer_.lines(); }

 private:
  bool push(const devpool::net::Descriptor& d) {
    std::byte record[devpool::net::kDescriptorBytes];
    devpool::net::encode_descriptor(d, record);
    if (producer_.push(record)) return true;
    producer_.flush();
    return producer_.push(record);
  }

  devpool::ChannelProducer<Lines> producer_;
  std::deque<devpool::net::Descriptor> waiting_;
};

// Set by SIGINT/SIGTERM; the loops return when they see it.
std::atomic<bool>& stop_requested();
void install_stop_handlers();

}  // namespace cxlpool::devpool_tool
