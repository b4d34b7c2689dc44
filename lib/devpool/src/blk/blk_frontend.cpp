// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/blk_frontend.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "blk_doorbell.hpp"
#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::devpool::blk {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint32_t kMaxTags = 1u << 16;  // the low half of a command id is the tag
constexpr std::uint32_t kDrainBatch = 64;
constexpr auto kYieldWindow = std::chrono::milliseconds(2);
constexpr auto kMaxNap = std::chrono::microseconds(200);
// Waits that ran out while the slot became ready (a backend that does not
// ring) before the frontend stops sleeping on the doorbell.
constexpr std::uint32_t kMissedRings = 3;

using Clock = std::chrono::steady_clock;

template <class Lines>
class Queue final : public BlkFrontend {
 public:
  Queue(const LinkView& link, const BlkFrontendOptions& options, ChannelProducer<Lines> requests,
        ChannelConsumer<Lines> completions)
      : options_(options), completion_channel_(link.completion_channel), completion_geometry_(link.geometry.completions),
        requests_(std::move(requests)), completions_(std::move(completions)) {
    init_buffers(link.frontend_buffers);
    const std::uint32_t tags = std::min(link.geometry.requests.slots, kMaxTags);
    entries_.resize(tags);
    free_.reserve(tags);
    for (std::uint32_t i = tags; i > 0; --i) free_.push_back(i - 1);
    raw_.resize(static_cast<std::size_t>(kDrainBatch) * kCompletionBytes);
  }

  Result<void> identify() {
    auto buffer = alloc_buffer(kPage);
    if (!buffer) return tl::unexpected(buffer.error());
    BlkRequest r;
    r.opcode = Opcode::kIdentify;
    r.length = kIdentifyBytes;
    r.buffer_offset = *buffer;
    auto sent = submit({&r, 1});
    Result<void> outcome;
    if (!sent) {
      outcome = tl::unexpected(sent.error());
    } else {
      BlkResult result;
      auto got = poll({&result, 1}, 1, options_.command_timeout + options_.probe_interval);
      if (!got) {
        outcome = tl::unexpected(got.error());
      } else if (*got == 0) {
        outcome = fail(ETIMEDOUT, "blk: no backend answered identify");
      } else if (result.status < 0) {
        outcome = fail(-result.status, "blk: identify failed");
      } else if (auto info = decode_identify(area_.subspan(*buffer, kIdentifyBytes)); !info) {
        outcome = fail(EPROTO, info.error().message);
      } else {
        device_ = *info;
      }
    }
    (void)free_buffer(*buffer);
    return outcome;
  }

  Result<std::size_t> submit(std::span<const BlkRequest> requests) override {
    if (dead_ != 0) return fail(ENOTCONN, "blk: the backend is gone");
    std::size_t sent = 0;
    for (const BlkRequest& r : requests) {
      if (free_.empty()) break;
      const std::uint32_t tag = free_.back();
      Entry& e = entries_[tag];
      Command c;
      c.opcode = r.opcode;
      c.flags = r.flags;
      c.command_id = (static_cast<std::uint32_t>(e.generation) << 16) | tag;
      c.offset = r.offset;
      c.length = r.length;
      c.buffer_offset = r.buffer_offset;
      if (auto ok = validate_command(c, device_, area_); !ok) {
        if (sent == 0) return tl::unexpected(ok.error());
        break;  // reported when the caller submits it again
      }
      const CommandBytes record = encode_command(c);
      if (!requests_.push(record.data())) break;
      free_.pop_back();
      e.busy = true;
      e.user_data = r.user_data;
      e.length = r.length;
      ++sent;
    }
    if (sent == 0) return fail(EAGAIN, "blk: the request queue is full");
    requests_.flush();
    if (in_flight() == sent) last_progress_ = Clock::now();  // the wait for an answer starts now
    return sent;
  }

  Result<std::size_t> poll(std::span<BlkResult> out, std::size_t min, std::chrono::nanoseconds timeout) override {
    min = std::min(min, out.size());
    const auto start = Clock::now();
    const auto limit = std::min<std::chrono::nanoseconds>(timeout, std::chrono::hours(24));
    auto nap = std::chrono::nanoseconds(1000);
    for (;;) {
      if (auto ok = drain(); !ok) return tl::unexpected(ok.error());
      check_backend();
      if (ready_.size() >= min || in_flight() == 0) break;
      const auto now = Clock::now();
      if (now - start >= limit) break;
      if (now - last_progress_ < options_.spin) continue;
      if (doorbell_) {
        // Sleep until the backend publishes the slot we wait for.
        const std::uint64_t position = completions_.consumed();
        std::uint32_t* word = slot_sequence_word(completion_channel_, completion_geometry_, position);
        const std::uint32_t ready = static_cast<std::uint32_t>(position + 1);
        const std::uint32_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        if (seen != ready &&
            wait_doorbell(word, seen, std::min<std::chrono::nanoseconds>(options_.doorbell_wait, limit - (now - start))) &&
            __atomic_load_n(word, __ATOMIC_ACQUIRE) == ready && ++missed_rings_ >= kMissedRings) {
          doorbell_ = false;  // the slot came without a ring: this backend polls only
        }
        continue;
      }
      // Answers are due while the backend works: give the CPU away without
      // sleeping (a nap costs a timer's slack per wait), nap only when the
      // backend has been quiet for a while.
      if (now - last_progress_ < kYieldWindow) {
        std::this_thread::yield();
        continue;
      }
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(nap, limit - (now - start)));
      nap = std::min<std::chrono::nanoseconds>(nap * 2, kMaxNap);
    }
    const std::size_t n = std::min(out.size(), ready_.size());
    std::copy_n(ready_.begin(), n, out.begin());
    ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(n));
    if (n == 0 && dead_ != 0 && in_flight() == 0) {
      return fail(dead_, dead_ == ETIMEDOUT ? "blk: the backend stopped answering" : "blk: the backend is gone");
    }
    return n;
  }

  std::uint32_t in_flight() const override { return static_cast<std::uint32_t>(entries_.size() - free_.size()); }
  std::uint32_t max_in_flight() const override { return static_cast<std::uint32_t>(entries_.size()); }
  int gone() const override { return dead_; }

 private:
  struct Entry {
    bool busy = false;
    std::uint16_t generation = 0;
    std::uint32_t length = 0;
    std::uint64_t user_data = 0;
  };

  Result<void> drain() {
    if (dead_ != 0) return {};
    for (;;) {
      auto got = completions_.poll(raw_.data(), kDrainBatch);
      if (!got) return broken(got.error().message);
      if (*got == 0) return {};
      last_progress_ = Clock::now();
      for (std::uint32_t i = 0; i < *got; ++i) {
        auto c = decode_completion({raw_.data() + static_cast<std::size_t>(i) * kCompletionBytes, kCompletionBytes});
        if (!c) return broken(c.error().message);
        const std::uint32_t tag = c->command_id & 0xffff;
        if (tag >= entries_.size() || !entries_[tag].busy || entries_[tag].generation != (c->command_id >> 16)) {
          return broken("blk: completion for command " + std::to_string(c->command_id) + " that is not outstanding");
        }
        Entry& e = entries_[tag];
        if (c->bytes > e.length) return broken("blk: completion reports more bytes than asked for");
        ready_.push_back(BlkResult{e.user_data, c->status, c->bytes});
        release(tag);
      }
      if (*got < kDrainBatch) return {};
    }
  }

  void release(std::uint32_t tag) {
    Entry& e = entries_[tag];
    e.busy = false;
    ++e.generation;  // a late duplicate of this id no longer matches
    free_.push_back(tag);
  }

  // A backend that broke the protocol is not trusted with more commands.
  Result<void> broken(const std::string& why) {
    die(EPROTO);
    return fail(EPROTO, why);
  }

  void check_backend() {
    if (dead_ != 0 || in_flight() == 0) return;
    const auto now = Clock::now();
    const auto quiet = now - last_progress_;
    if (quiet >= options_.command_timeout) {
      die(ETIMEDOUT);
    } else if (options_.backend_alive && quiet >= options_.probe_interval && now - last_probe_ >= options_.probe_interval) {
      last_probe_ = now;
      if (!options_.backend_alive()) die(ENOTCONN);
    }
  }

  // Every outstanding command fails with `error`; nothing is sent again.
  void die(int error) {
    dead_ = error;
    for (std::uint32_t tag = 0; tag < entries_.size(); ++tag) {
      if (!entries_[tag].busy) continue;
      ready_.push_back(BlkResult{entries_[tag].user_data, -error, 0});
      release(tag);
    }
  }

  BlkFrontendOptions options_;
  bool doorbell_ = options_.doorbell;
  std::uint32_t missed_rings_ = 0;
  std::span<std::byte> completion_channel_;
  ChannelGeometry completion_geometry_;
  ChannelProducer<Lines> requests_;
  ChannelConsumer<Lines> completions_;
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
  std::vector<BlkResult> ready_;
  std::vector<std::byte> raw_;
  Clock::time_point last_progress_ = Clock::now();
  Clock::time_point last_probe_{};
  int dead_ = 0;
};

template <class Lines>
Result<std::unique_ptr<BlkFrontend>> attach(const LinkView& link, const BlkFrontendOptions& options) {
  auto requests = ChannelProducer<Lines>::attach(link.request_channel);
  if (!requests) return tl::unexpected(requests.error());
  auto completions = ChannelConsumer<Lines>::attach(link.completion_channel);
  if (!completions) return tl::unexpected(completions.error());
  auto queue = std::make_unique<Queue<Lines>>(link, options, std::move(*requests), std::move(*completions));
  if (auto ok = queue->identify(); !ok) return tl::unexpected(ok.error());
  return std::unique_ptr<BlkFrontend>(std::move(queue));
}

}  // namespace

void BlkFrontend::init_buffers(std::span<std::byte> area) {
  area_ = area;
  const std::size_t pages = area.size() / kPage;
  run_pages_.assign(pages, 0);
  page_used_.assign(pages, false);
}

Result<std::uint64_t> BlkFrontend::alloc_buffer(std::uint64_t bytes) {
  if (bytes == 0) return fail(EINVAL, "blk: a buffer of 0 bytes");
  const std::uint64_t want = (bytes + kPage - 1) / kPage;
  std::uint64_t run = 0;
  for (std::size_t p = 0; p < page_used_.size(); ++p) {
    run = page_used_[p] ? 0 : run + 1;
    if (run < want) continue;
    const std::size_t first = p + 1 - want;
    for (std::size_t q = first; q <= p; ++q) page_used_[q] = true;
    run_pages_[first] = static_cast<std::uint32_t>(want);
    return first * kPage;
  }
  return fail(ENOMEM, "blk: no free run of " + std::to_string(want) + " pages in the buffer area");
}

Result<void> BlkFrontend::free_buffer(std::uint64_t offset) {
  const std::uint64_t first = offset / kPage;
  if (offset % kPage != 0 || first >= run_pages_.size() || run_pages_[first] == 0) {
    return fail(EINVAL, "blk: " + std::to_string(offset) + " is not an allocated buffer");
  }
  for (std::uint64_t q = first; q < first + run_pages_[first]; ++q) page_used_[q] = false;
  run_pages_[first] = 0;
  return {};
}

Result<std::unique_ptr<BlkFrontend>> make_blk_frontend(const LinkView& link, const BlkFrontendOptions& options) {
  if (auto ok = check_blk_link(link.geometry); !ok) return tl::unexpected(ok.error());
  if (link.geometry.requests.coherence == Coherence::kNonCoherent) return attach<NonCoherentLines>(link, options);
  return attach<CoherentLines>(link, options);
}

}  // namespace cxlpool::devpool::blk
