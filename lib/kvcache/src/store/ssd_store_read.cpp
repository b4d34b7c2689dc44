// SPDX-License-Identifier: Apache-2.0
// SsdStore read path: synchronous and batched gets, CRC checks, and the one
// place that talks to the device (io_now), which keeps batched reads in
// flight while the write path does its synchronous I/O.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/kvcache/crc32c.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"

namespace cxlpool::kvcache {

namespace {

// user_data of the store's own synchronous requests; batched reads use their
// slot number in pending_, which is far below.
constexpr std::uint64_t kSyncTag = ~std::uint64_t{0};

const char* read_error_text(int err) {
  switch (err) {
    case ENOENT: return "not stored";
    case EINVAL: return "buffer too small or misaligned";
    case EBADMSG: return "payload CRC mismatch (entry dropped)";
    case EIO: return "I/O error or short read (entry dropped)";
    default: return "device error (entry dropped)";
  }
}

}  // namespace

SsdStore::~SsdStore() { (void)drain_reads(); }

std::optional<std::uint32_t> SsdStore::payload_bytes(const ChunkKey& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second.payload_bytes;
}

bool SsdStore::in_open_region(const Slot& slot) const {
  return writer_.is_open() && slot.region == open_region_;
}

int SsdStore::check_buffer(const Slot& slot, std::span<std::byte> buffer) const {
  if (buffer.size() < read_buffer_bytes(slot.payload_bytes)) return EINVAL;
  if (reinterpret_cast<std::uintptr_t>(buffer.data()) % device_->mem_alignment() != 0) return EINVAL;
  return 0;
}

int SsdStore::check_read(const Slot& slot, std::int64_t result, const std::byte* buffer) {
  if (result < 0) return static_cast<int>(-result);
  if (result < static_cast<std::int64_t>(read_buffer_bytes(slot.payload_bytes))) return EIO;
  if (crc32c({buffer, slot.payload_bytes}) != slot.payload_crc) return EBADMSG;
  return 0;
}

void SsdStore::drop_entry(const ChunkKey& key, std::uint64_t sequence) {
  auto it = index_.find(key);
  if (it != index_.end() && it->second.sequence == sequence) {
    index_.erase(it);
    notify_evicted(key);
  }
}

// Accounts for a finished device read of slot; a failed one takes only that
// entry out of the index (if it was not replaced meanwhile).
int SsdStore::finish_read(const ChunkKey& key, const Slot& slot, std::int64_t result, const std::byte* buffer) {
  const int err = check_read(slot, result, buffer);
  if (err == 0) {
    ++stats_.reads;
    stats_.read_bytes += slot.payload_bytes;
    auto it = index_.find(key);
    if (it != index_.end() && it->second.sequence == slot.sequence && it->second.hits < 255) ++it->second.hits;
    return 0;
  }
  if (err == EBADMSG) {
    ++stats_.corrupt_dropped;
  } else {
    ++stats_.read_errors;
  }
  drop_entry(key, slot.sequence);
  return err;
}

Result<std::uint32_t> SsdStore::get(const ChunkKey& key, std::span<std::byte> buffer) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return fail(ENOENT, "ssd store get: not stored");
  }
  Slot& live = it->second;
  if (check_buffer(live, buffer) != 0) {
    return fail(EINVAL, "ssd store get: buffer needs " + std::to_string(read_buffer_bytes(live.payload_bytes)) +
                            " bytes aligned to " + std::to_string(device_->mem_alignment()));
  }
  if (in_open_region(live)) {
    std::memcpy(buffer.data(), writer_.bytes(live.payload_offset, live.payload_bytes).data(), live.payload_bytes);
    ++stats_.reads;
    stats_.read_bytes += live.payload_bytes;
    if (live.hits < 255) ++live.hits;
    return live.payload_bytes;
  }
  const Slot slot = live;
  hal::IoRequest r;
  r.op = hal::IoOp::kRead;
  r.offset = region_base(slot.region) + slot.payload_offset;
  r.buffer = buffer.data();
  r.length = read_buffer_bytes(slot.payload_bytes);
  auto got = io_now(r);
  if (!got) {
    ++stats_.read_errors;
    return tl::unexpected(got.error());
  }
  if (const int err = finish_read(key, slot, *got, buffer.data()); err != 0) {
    return fail(err, std::string("ssd store get: ") + read_error_text(err));
  }
  return slot.payload_bytes;
}

Result<std::size_t> SsdStore::submit_gets(std::span<const SsdGetRequest> requests) {
  std::vector<hal::IoRequest> batch;
  std::size_t accepted = 0;
  for (const SsdGetRequest& req : requests) {
    auto it = index_.find(req.key);
    if (it == index_.end()) {
      ++stats_.misses;
      ready_.push_back(SsdGetCompletion{req.user_data, req.key, ENOENT, 0});
      ++accepted;
      continue;
    }
    Slot& live = it->second;
    if (check_buffer(live, req.buffer) != 0) {
      ready_.push_back(SsdGetCompletion{req.user_data, req.key, EINVAL, 0});
      ++accepted;
      continue;
    }
    if (in_open_region(live)) {
      std::memcpy(req.buffer.data(), writer_.bytes(live.payload_offset, live.payload_bytes).data(),
                  live.payload_bytes);
      ++stats_.reads;
      stats_.read_bytes += live.payload_bytes;
      if (live.hits < 255) ++live.hits;
      ready_.push_back(SsdGetCompletion{req.user_data, req.key, 0, live.payload_bytes});
      ++accepted;
      continue;
    }
    if (free_tags_.empty() || device_->in_flight() + batch.size() >= device_->queue_depth()) break;
    const std::uint32_t tag = free_tags_.back();
    free_tags_.pop_back();
    pending_[tag] = PendingGet{req.key, live, req.buffer.data(), req.user_data};
    hal::IoRequest r;
    r.op = hal::IoOp::kRead;
    r.offset = region_base(live.region) + live.payload_offset;
    r.buffer = req.buffer.data();
    r.length = read_buffer_bytes(live.payload_bytes);
    r.user_data = tag;
    r.buffer_index = req.buffer_index;
    batch.push_back(r);
    ++accepted;
  }
  if (batch.empty()) return accepted;
  if (auto ok = device_->submit(batch); !ok) {
    // Nothing of the batch reached the device: each accepted get still gets
    // exactly one completion, carrying the error.
    for (const hal::IoRequest& r : batch) {
      const PendingGet& p = pending_[r.user_data];
      ++stats_.read_errors;
      ready_.push_back(SsdGetCompletion{p.user_data, p.key, ok.error().code, 0});
      free_tags_.push_back(static_cast<std::uint32_t>(r.user_data));
    }
    return accepted;
  }
  reads_on_device_ += batch.size();
  return accepted;
}

void SsdStore::handle_completion(const hal::IoCompletion& c) {
  const auto tag = static_cast<std::uint32_t>(c.user_data);
  const PendingGet p = pending_[tag];
  free_tags_.push_back(tag);
  --reads_on_device_;
  const int err = finish_read(p.key, p.slot, c.result, p.buffer);
  ready_.push_back(SsdGetCompletion{p.user_data, p.key, err, err == 0 ? p.slot.payload_bytes : 0});
}

Result<std::size_t> SsdStore::poll_gets(std::span<SsdGetCompletion> out, std::size_t min,
                                        std::chrono::nanoseconds timeout) {
  min = std::min({min, gets_in_flight(), out.size()});
  if (reads_on_device_ > 0) {
    const std::size_t want = ready_.size() >= min ? 0 : min - ready_.size();
    if (poll_scratch_.size() < reads_on_device_) poll_scratch_.resize(reads_on_device_);
    const std::span<hal::IoCompletion> cs(poll_scratch_.data(), reads_on_device_);
    auto got = device_->poll_completions(cs, want, want == 0 ? std::chrono::nanoseconds(0) : timeout);
    if (!got) return tl::unexpected(got.error());
    for (std::size_t i = 0; i < *got; ++i) handle_completion(cs[i]);
  }
  std::size_t n = 0;
  while (n < out.size() && !ready_.empty()) {
    out[n++] = ready_.front();
    ready_.pop_front();
  }
  return n;
}

Result<void> SsdStore::drain_reads() {
  std::array<hal::IoCompletion, 32> cs;
  while (reads_on_device_ > 0) {
    auto got = device_->poll_completions(cs, 1);
    if (!got) return tl::unexpected(got.error());
    for (std::size_t i = 0; i < *got; ++i) handle_completion(cs[i]);
  }
  return {};
}

// Runs one request to completion. Batched reads that complete meanwhile are
// accounted and queued for poll_gets.
Result<std::int64_t> SsdStore::io_now(hal::IoRequest request) {
  request.user_data = kSyncTag;
  std::array<hal::IoCompletion, 32> cs;
  while (device_->in_flight() >= device_->queue_depth()) {
    auto got = device_->poll_completions(cs, 1);
    if (!got) return tl::unexpected(got.error());
    for (std::size_t i = 0; i < *got; ++i) handle_completion(cs[i]);
  }
  if (auto ok = device_->submit({&request, 1}); !ok) return tl::unexpected(ok.error());
  for (;;) {
    auto got = device_->poll_completions(cs, 1);
    if (!got) return tl::unexpected(got.error());
    std::optional<std::int64_t> mine;
    for (std::size_t i = 0; i < *got; ++i) {
      if (cs[i].user_data == kSyncTag) {
        mine = cs[i].result;
      } else {
        handle_completion(cs[i]);
      }
    }
    if (mine) return *mine;
  }
}

}  // namespace cxlpool::kvcache
