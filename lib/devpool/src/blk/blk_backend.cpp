// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/blk_backend.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "blk_doorbell.hpp"
#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::devpool::blk {
namespace {

// io_uring registers at most 1 GiB per buffer: a larger area is registered
// in pieces, and a request names the piece its buffer starts in.
constexpr std::uint64_t kRegisteredPiece = 1ull << 30;

constexpr std::uint32_t kMaxPollBatch = 64;
constexpr auto kDeviceWait = std::chrono::microseconds(20);

template <class Lines>
class ServeLoop final : public BlkBackend {
 public:
  ServeLoop(const LinkView& link, hal::BlockDevice& device, const BlkBackendOptions& options,
            ChannelConsumer<Lines> requests, ChannelProducer<Lines> completions)
      : BlkBackend(options),
        area_(link.frontend_buffers),
        completion_channel_(link.completion_channel),
        completion_geometry_(link.geometry.completions),
        device_(device),
        info_(device_info_of(device, options)),
        requests_(std::move(requests)),
        completions_(std::move(completions)) {
    const std::uint32_t depth = std::max<std::uint32_t>(1, std::min(options.queue_depth, device.queue_depth()));
    info_.queue_depth = depth;
    tags_.resize(depth);
    free_tags_.reserve(depth);
    for (std::uint32_t i = depth; i > 0; --i) free_tags_.push_back(i - 1);
    io_.reserve(depth);
    device_done_.resize(depth);
    raw_.resize(static_cast<std::size_t>(kMaxPollBatch) * kCommandBytes);
    if (options.register_buffers) register_area();
  }

  Result<bool> step(std::chrono::nanoseconds device_wait) override {
    bool moved = false;
    // Device completions first: they free tags for new commands.
    if (device_.in_flight() > 0) {
      // min 1: a ring that runs completion work only when its thread enters
      // the kernel (single_thread) gets that chance here.
      auto n = device_.poll_completions(device_done_, 1, device_wait);
      if (!n) return tl::unexpected(n.error());
      for (std::size_t i = 0; i < *n; ++i) device_completed(device_done_[i]);
      moved |= *n > 0;
    }
    if (auto ok = resubmit_followups(); !ok) return tl::unexpected(ok.error());
    moved |= post_completions();
    // New commands only while their completions have somewhere to wait.
    if (!free_tags_.empty() && pending_.size() < tags_.size()) {
      const auto room = std::min<std::uint32_t>(static_cast<std::uint32_t>(free_tags_.size()), kMaxPollBatch);
      auto got = requests_.poll(raw_.data(), room);
      if (!got) return tl::unexpected(got.error());
      if (*got > 0) {
        moved = true;
        if (auto ok = take_commands(*got); !ok) return tl::unexpected(ok.error());
        post_completions();
      }
    }
    return moved;
  }

  const DeviceInfo& device_info() const override { return info_; }
  const BlkBackendStats& stats() const override { return stats_; }
  std::uint32_t in_flight() const override { return static_cast<std::uint32_t>(tags_.size() - free_tags_.size()); }

 private:
  // A command on the device. A FUA write is a write followed by a data sync.
  struct Tag {
    std::uint32_t command_id = 0;
    Opcode opcode = Opcode::kRead;
    bool fua = false;
    std::uint32_t bytes = 0;  // transferred by the first stage
  };

  void register_area() {
    std::vector<iovec> pieces;
    for (std::uint64_t at = 0; at < area_.size(); at += kRegisteredPiece) {
      pieces.push_back({area_.data() + at, static_cast<std::size_t>(std::min<std::uint64_t>(kRegisteredPiece, area_.size() - at))});
    }
    if (pieces.empty() || pieces.size() > 1024) return;
    stats_.buffers_registered = device_.register_buffers(pieces).has_value();
  }

  std::int32_t buffer_index(std::span<std::byte> buffer) const {
    if (!stats_.buffers_registered) return hal::kNoRegisteredBuffer;
    const auto at = static_cast<std::uint64_t>(buffer.data() - area_.data());
    // A buffer crossing a piece boundary is not inside one registered buffer.
    if (at / kRegisteredPiece != (at + buffer.size() - 1) / kRegisteredPiece) return hal::kNoRegisteredBuffer;
    return static_cast<std::int32_t>(at / kRegisteredPiece);
  }

  void answer(std::uint32_t command_id, std::int32_t status, std::uint32_t bytes) {
    pending_.push_back(Completion{command_id, status, status < 0 ? 0 : bytes});
  }

  void reject(std::uint32_t command_id, const Error& e) {
    ++stats_.rejected;
    answer(command_id, -(e.code > 0 && e.code <= 4095 ? e.code : EIO), 0);
  }

  Result<void> take_commands(std::uint32_t count) {
    io_.clear();
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::span<const std::byte, kCommandBytes> record(raw_.data() + static_cast<std::size_t>(i) * kCommandBytes, kCommandBytes);
      ++stats_.commands;
      auto command = decode_command(record);
      if (!command) {
        reject(command_id_of(record), command.error());
        continue;
      }
      auto buffer = validate_command(*command, info_, area_);
      if (!buffer) {
        reject(command->command_id, buffer.error());
        continue;
      }
      if (command->opcode == Opcode::kIdentify) {
        ++stats_.identifies;
        const IdentifyBytes id = encode_identify(info_);
        std::memcpy(buffer->data(), id.data(), id.size());
        answer(command->command_id, 0, static_cast<std::uint32_t>(id.size()));
        continue;
      }
      const std::uint32_t t = free_tags_.back();
      free_tags_.pop_back();
      tags_[t] = Tag{command->command_id, command->opcode, (command->flags & kFlagFua) != 0, 0};
      hal::IoRequest r;
      r.user_data = t;
      switch (command->opcode) {
        case Opcode::kRead: r.op = hal::IoOp::kRead; break;
        case Opcode::kWrite: r.op = hal::IoOp::kWrite; break;
        default: r.op = hal::IoOp::kFdatasync; break;
      }
      if (command->opcode != Opcode::kFlush) {
        r.offset = command->offset;
        r.buffer = buffer->data();
        r.length = command->length;
        r.buffer_index = buffer_index(*buffer);
      }
      io_.push_back(r);
    }
    return submit_io();
  }

  Result<void> submit_io() {
    if (io_.empty()) return {};
    auto ok = device_.submit(io_);
    if (!ok) {
      // Every command of the batch is answered with the device's refusal;
      // only a device that fails outside any request ends the loop.
      for (const hal::IoRequest& r : io_) finish(static_cast<std::uint32_t>(r.user_data), -ok.error().code, 0);
    }
    io_.clear();
    return {};
  }

  void device_completed(const hal::IoCompletion& c) {
    const auto t = static_cast<std::uint32_t>(c.user_data);
    Tag& tag = tags_[t];
    if (c.result < 0) {
      ++stats_.device_errors;
      finish(t, static_cast<std::int32_t>(c.result), 0);
      return;
    }
    const auto bytes = static_cast<std::uint32_t>(c.result);
    switch (c.op) {
      case hal::IoOp::kRead:
        ++stats_.reads;
        stats_.bytes_read += bytes;
        finish(t, 0, bytes);
        return;
      case hal::IoOp::kWrite:
        ++stats_.writes;
        stats_.bytes_written += bytes;
        if (tag.fua) {
          tag.bytes = bytes;
          followups_.push_back(t);
          return;
        }
        finish(t, 0, bytes);
        return;
      case hal::IoOp::kFsync:
      case hal::IoOp::kFdatasync:
        if (tag.opcode == Opcode::kFlush) ++stats_.flushes;
        finish(t, 0, tag.opcode == Opcode::kWrite ? tag.bytes : 0);
        return;
    }
  }

  // The data syncs of FUA writes whose data reached the device.
  Result<void> resubmit_followups() {
    if (followups_.empty()) return {};
    io_.clear();
    for (std::uint32_t t : followups_) {
      hal::IoRequest r;
      r.op = hal::IoOp::kFdatasync;
      r.user_data = t;
      io_.push_back(r);
    }
    followups_.clear();
    return submit_io();
  }

  void finish(std::uint32_t t, std::int32_t status, std::uint32_t bytes) {
    answer(tags_[t].command_id, std::max(status, -4095), bytes);
    free_tags_.push_back(t);
  }

  // Publishes as many pending completions as the ring takes; the rest wait
  // for the frontend to consume.
  bool post_completions() {
    const std::uint64_t first = completions_.published();
    std::size_t sent = 0;
    while (sent < pending_.size()) {
      const CompletionBytes record = encode_completion(pending_[sent]);
      if (!completions_.push(record.data())) break;
      ++sent;
    }
    if (completions_.flush() > 0 || sent > 0) ++stats_.completion_batches;
    // The frontend may sleep on the first slot this round published.
    if (options_.doorbell && completions_.published() != first) {
      ring_doorbell(slot_sequence_word(completion_channel_, completion_geometry_, first));
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(sent));
    return sent > 0;
  }

  std::span<std::byte> area_;
  std::span<std::byte> completion_channel_;
  ChannelGeometry completion_geometry_;
  hal::BlockDevice& device_;
  DeviceInfo info_;
  ChannelConsumer<Lines> requests_;
  ChannelProducer<Lines> completions_;
  BlkBackendStats stats_;
  std::vector<Tag> tags_;
  std::vector<std::uint32_t> free_tags_;
  std::vector<std::uint32_t> followups_;
  std::vector<hal::IoRequest> io_;
  std::vector<hal::IoCompletion> device_done_;
  std::vector<Completion> pending_;
  std::vector<std::byte> raw_;
};

template <class Lines>
Result<std::unique_ptr<BlkBackend>> attach(const LinkView& link, hal::BlockDevice& device, const BlkBackendOptions& options) {
  auto requests = ChannelConsumer<Lines>::attach(link.request_channel);
  if (!requests) return tl::unexpected(requests.error());
  auto completions = ChannelProducer<Lines>::attach(link.completion_channel);
  if (!completions) return tl::unexpected(completions.error());
  return std::unique_ptr<BlkBackend>(
      new ServeLoop<Lines>(link, device, options, std::move(*requests), std::move(*completions)));
}

}  // namespace

Result<void> BlkBackend::run(const std::atomic<bool>& stop, const std::function<bool()>& leave) {
  auto idle_since = std::chrono::steady_clock::now();
  auto sleep = std::chrono::nanoseconds(1000);
  bool waiting = false;
  while (!stop.load(std::memory_order_relaxed)) {
    // A round that found nothing to do while the device holds commands
    // waits in the device for the next completion, briefly: on a busy host
    // the CPU goes to the frontend and the I/O's completion work instead of
    // a spinning loop, and new commands wait at most kDeviceWait.
    auto moved = step(waiting ? kDeviceWait : std::chrono::nanoseconds(0));
    if (!moved) return tl::unexpected(moved.error());
    if (*moved) {
      waiting = false;
      idle_since = std::chrono::steady_clock::now();
      sleep = std::chrono::nanoseconds(1000);
      continue;
    }
    // While the device holds commands their completions are due any moment:
    // keep polling, as a polled-mode driver does. Idle, spin a little
    // longer, then nap with a growing sleep so an unused link costs nothing.
    waiting = in_flight() > 0;
    if (waiting) continue;
    if (std::chrono::steady_clock::now() - idle_since < options_.spin) continue;
    if (leave && leave()) return {};
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, options_.max_sleep);
  }
  return {};
}

void add_stats(BlkBackendStats& total, const BlkBackendStats& s) {
  total.commands += s.commands;
  total.reads += s.reads;
  total.writes += s.writes;
  total.flushes += s.flushes;
  total.identifies += s.identifies;
  total.rejected += s.rejected;
  total.device_errors += s.device_errors;
  total.bytes_read += s.bytes_read;
  total.bytes_written += s.bytes_written;
  total.completion_batches += s.completion_batches;
}

DeviceInfo device_info_of(const hal::BlockDevice& device, const BlkBackendOptions& options) {
  DeviceInfo d;
  d.block_size = std::clamp<std::uint32_t>(std::max(device.logical_block_size(), device.offset_alignment()), 512, 64 * 1024);
  d.mem_alignment = std::clamp<std::uint32_t>(device.mem_alignment(), 1, 4096);
  d.capacity = device.size() / d.block_size * d.block_size;
  d.max_transfer = kMaxTransferBytes / d.block_size * d.block_size;
  d.queue_depth = std::max<std::uint32_t>(1, std::min(options.queue_depth, device.queue_depth()));
  d.flags = options.read_only ? kIdentifyReadOnly : 0;
  return d;
}

Result<std::unique_ptr<BlkBackend>> make_blk_backend(const LinkView& link, hal::BlockDevice& device,
                                                     const BlkBackendOptions& options) {
  if (auto ok = check_blk_link(link.geometry); !ok) return tl::unexpected(ok.error());
  if (link.geometry.requests.coherence == Coherence::kNonCoherent) return attach<NonCoherentLines>(link, device, options);
  return attach<CoherentLines>(link, device, options);
}

}  // namespace cxlpool::devpool::blk
