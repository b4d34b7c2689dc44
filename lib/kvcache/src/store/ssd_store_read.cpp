// SPDX-License-Identifier: Apache-2.0
// SsdStore read path: synchronous and batched gets, CRC checks, and the
// synchronous request (io_now), which keeps batched reads and region writes
// in flight while the write path does its synchronous I/O.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/stream_copy.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"
#include "outcome_error.hpp"
#include "ssd_store_tags.hpp"

namespace cxlpool::kvcache {

// The kernel may still be reading the region buffers or lent payloads:
// wait for it. Payloads lent to a region never sealed go back unwritten.
SsdStore::~SsdStore() {
  (void)drain_reads();
  (void)wait_for_writes();
  for (Region& reg : regions_) return_lent(reg);
}

std::optional<std::uint32_t> SsdStore::payload_bytes(const ChunkKey& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second.payload_bytes;
}

const RegionWriter* SsdStore::buffer_of(const Slot& slot) const {
  const std::int32_t b = regions_[slot.region].buffer;
  return b == kNoBuffer ? nullptr : &writers_[static_cast<std::size_t>(b)];
}

// The buffer (or a lent payload that cannot change) holds what the device
// will: no CRC check needed. A lent payload its owner may still write is
// checked once copied, where it can no longer change.
KvOutcome SsdStore::copy_from_buffer(const ChunkKey& key, const RegionWriter& w, Slot& live, std::byte* out) {
  const std::byte* from = live.lent != nullptr ? live.lent : w.bytes(live.payload_offset, live.payload_bytes).data();
  stream_copy(out, from, live.payload_bytes);
  if (live.lent != nullptr && live.check_lent && crc32c({out, live.payload_bytes}) != live.payload_crc) {
    // Its owner changed it after the put: the entry is gone, as if deleted.
    drop_changed(key);
    return KvStatus::kNotFound;
  }
  ++stats_.reads;
  ++stats_.buffer_reads;
  stats_.read_bytes += live.payload_bytes;
  if (live.hits < 255) ++live.hits;
  return KvStatus::kOk;
}

bool SsdStore::buffer_fits(const Slot& slot, std::span<std::byte> buffer) const {
  return buffer.size() >= read_buffer_bytes(slot.payload_bytes) &&
         reinterpret_cast<std::uintptr_t>(buffer.data()) % device_->mem_alignment() == 0;
}

std::uint32_t ssd_read_digest(std::span<const std::byte> bytes) { return crc32c(bytes); }

KvOutcome SsdStore::check_read(const Slot& slot, std::int64_t result, const std::byte* buffer,
                               std::optional<std::uint32_t> crc) {
  if (result < 0) return KvOutcome::device_error(static_cast<int>(-result));
  if (result < static_cast<std::int64_t>(read_buffer_bytes(slot.payload_bytes))) return KvOutcome::device_error(EIO);
  if (crc.value_or(crc32c({buffer, slot.payload_bytes})) != slot.payload_crc) return KvStatus::kChecksumError;
  return KvStatus::kOk;
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
KvOutcome SsdStore::finish_read(const ChunkKey& key, const Slot& slot, std::int64_t result,
                                const std::byte* buffer, const hal::IoCompletion* digested) {
  KvOutcome outcome = KvStatus::kOk;
  // submit_gets asks for the digest of exactly the payload's bytes.
  if (digested != nullptr && digested->digested) {
    outcome = check_read(slot, result, buffer, digested->digest);
    stats_.verify_ns += digested->digest_ns;
    ++stats_.worker_verifies;
  } else {
    // Timed: the checksum is the CPU work a read costs the caller's thread.
    const auto t0 = std::chrono::steady_clock::now();
    outcome = check_read(slot, result, buffer, std::nullopt);
    stats_.verify_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  }
  if (outcome.ok()) {
    ++stats_.reads;
    stats_.read_bytes += slot.payload_bytes;
    auto it = index_.find(key);
    if (it != index_.end() && it->second.sequence == slot.sequence && it->second.hits < 255) ++it->second.hits;
    return outcome;
  }
  if (outcome.status == KvStatus::kChecksumError) {
    ++stats_.corrupt_dropped;
  } else {
    ++stats_.read_errors;
  }
  drop_entry(key, slot.sequence);
  return outcome;
}

KvResult<std::uint32_t> SsdStore::get(const ChunkKey& key, std::span<std::byte> buffer) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return KvStatus::kNotFound;
  }
  Slot& live = it->second;
  if (!buffer_fits(live, buffer)) return KvStatus::kInvalid;
  if (const RegionWriter* w = buffer_of(live)) {
    const std::uint32_t bytes = live.payload_bytes;
    if (const KvOutcome copied = copy_from_buffer(key, *w, live, buffer.data()); !copied.ok()) return copied;
    return bytes;
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
    return device_failure(got.error());
  }
  if (const KvOutcome outcome = finish_read(key, slot, *got, buffer.data()); !outcome.ok()) return outcome;
  return slot.payload_bytes;
}

std::size_t SsdStore::submit_gets(std::span<const SsdGetRequest> requests) {
  std::vector<hal::IoRequest> batch;
  std::size_t accepted = 0;
  for (const SsdGetRequest& req : requests) {
    auto it = index_.find(req.key);
    if (it == index_.end()) {
      ++stats_.misses;
      ready_.push_back(SsdGetCompletion{req.user_data, req.key, KvStatus::kNotFound, 0});
      ++accepted;
      continue;
    }
    Slot& live = it->second;
    if (!buffer_fits(live, req.buffer)) {
      ready_.push_back(SsdGetCompletion{req.user_data, req.key, KvStatus::kInvalid, 0});
      ++accepted;
      continue;
    }
    if (const RegionWriter* w = buffer_of(live)) {
      const std::uint32_t bytes = live.payload_bytes;
      const KvOutcome copied = copy_from_buffer(req.key, *w, live, req.buffer.data());
      ready_.push_back(SsdGetCompletion{req.user_data, req.key, copied, copied.ok() ? bytes : 0});
      ++accepted;
      continue;
    }
    if (free_tags_.empty() || device_->in_flight() + batch.size() + write_reserve_ >= device_->queue_depth()) break;
    const std::uint32_t tag = free_tags_.back();
    free_tags_.pop_back();
    pending_[tag] = PendingGet{req.key, live, req.buffer.data(), req.user_data};
    hal::IoRequest r;
    r.op = hal::IoOp::kRead;
    r.offset = region_base(live.region) + live.payload_offset;
    r.buffer = req.buffer.data();
    r.length = read_buffer_bytes(live.payload_bytes);
    r.user_data = ssd_tags::make(ssd_tags::Kind::kRead, tag);
    r.buffer_index = req.buffer_index;
    // Into a registered staging buffer, copied out at completion.
    if (r.buffer_index == hal::kNoRegisteredBuffer && staging_base_ != hal::kNoRegisteredBuffer &&
        !free_staging_.empty() && r.length <= align_up_block(config_.staging_bytes)) {
      const std::int32_t s = free_staging_.back();
      free_staging_.pop_back();
      pending_[tag].staging = s;
      r.buffer = staging_[static_cast<std::size_t>(s)].get();
      r.buffer_index = staging_base_ + s;
      ++stats_.staged_reads;
    }
    // Checked against the entry's CRC32C: a worker device takes it on its
    // own thread as the read completes.
    r.digest_bytes = live.payload_bytes;
    batch.push_back(r);
    ++accepted;
  }
  if (batch.empty()) return accepted;
  if (auto ok = device_->submit(batch); !ok) {
    // Nothing of the batch reached the device: each accepted get still gets
    // exactly one completion, carrying the device's error.
    const KvOutcome refused = device_failure(ok.error());
    for (const hal::IoRequest& r : batch) {
      const auto tag = static_cast<std::uint32_t>(ssd_tags::value_of(r.user_data));
      const PendingGet& p = pending_[tag];
      ++stats_.read_errors;
      ready_.push_back(SsdGetCompletion{p.user_data, p.key, refused, 0});
      if (p.staging != kNoBuffer) free_staging_.push_back(p.staging);
      free_tags_.push_back(tag);
    }
    return accepted;
  }
  reads_on_device_ += batch.size();
  return accepted;
}

void SsdStore::handle_completion(const hal::IoCompletion& c) {
  const auto tag = static_cast<std::uint32_t>(ssd_tags::value_of(c.user_data));
  const PendingGet p = pending_[tag];
  free_tags_.push_back(tag);
  --reads_on_device_;
  const std::byte* read = p.staging == kNoBuffer ? p.buffer : staging_[static_cast<std::size_t>(p.staging)].get();
  const KvOutcome outcome = finish_read(p.key, p.slot, c.result, read, &c);
  if (p.staging != kNoBuffer) {
    if (outcome.ok()) std::memcpy(p.buffer, read, p.slot.payload_bytes);
    free_staging_.push_back(p.staging);
  }
  ready_.push_back(SsdGetCompletion{p.user_data, p.key, outcome, outcome.ok() ? p.slot.payload_bytes : 0});
}

// Reaps whatever the device finished (region writes too) and returns the
// gets that are done, waiting for more while fewer than `min` are.
Result<std::size_t> SsdStore::poll_gets(std::span<SsdGetCompletion> out, std::size_t min,
                                        std::chrono::nanoseconds timeout) {
  min = std::min({min, gets_in_flight(), out.size()});
  const bool forever = timeout == hal::BlockDevice::kWaitForever;
  const auto deadline = forever ? std::chrono::steady_clock::time_point::max()
                                : std::chrono::steady_clock::now() + timeout;
  while (device_->in_flight() > 0) {
    const std::size_t short_by = ready_.size() >= min ? 0 : min - ready_.size();
    std::chrono::nanoseconds wait(0);
    if (short_by != 0) {
      wait = forever ? hal::BlockDevice::kWaitForever
                     : std::max(std::chrono::nanoseconds(0), deadline - std::chrono::steady_clock::now());
    }
    if (poll_scratch_.size() < device_->in_flight()) poll_scratch_.resize(device_->in_flight());
    const std::span<hal::IoCompletion> cs(poll_scratch_.data(), device_->in_flight());
    // Write completions count towards the device's minimum too: loop.
    auto got = device_->poll_completions(cs, short_by, wait);
    if (!got) return tl::unexpected(got.error());
    for (std::size_t i = 0; i < *got; ++i) dispatch(cs[i]);
    if (short_by == 0 || ready_.size() >= min) break;
    if (!forever && std::chrono::steady_clock::now() >= deadline) break;
  }
  std::size_t n = 0;
  while (n < out.size() && !ready_.empty()) {
    out[n++] = ready_.front();
    ready_.pop_front();
  }
  return n;
}

Result<void> SsdStore::drain_reads() {
  while (reads_on_device_ > 0) {
    if (auto ok = poll_device_once(); !ok) return ok;
  }
  return {};
}

Result<void> SsdStore::poll_device_once() {
  std::array<hal::IoCompletion, 32> cs;
  if (device_->in_flight() == 0) return fail(EINVAL, "ssd store: waiting on an idle device");
  auto got = device_->poll_completions(cs, 1);
  if (!got) return tl::unexpected(got.error());
  for (std::size_t i = 0; i < *got; ++i) dispatch(cs[i]);
  return {};
}

void SsdStore::dispatch(const hal::IoCompletion& c) {
  switch (ssd_tags::kind_of(c.user_data)) {
    case ssd_tags::Kind::kRead: handle_completion(c); break;
    case ssd_tags::Kind::kRegionWrite: handle_write_completion(c); break;
    case ssd_tags::Kind::kGroupSync: handle_sync_completion(c); break;
    case ssd_tags::Kind::kNow: now_result_ = c.result; break;
  }
  // A group sync that found the queue full goes out after any completion.
  if (written_unsynced_ != 0 && !sync_in_flight_) start_group_sync();
}

// Runs one request to completion. Whatever else completes meanwhile is
// dispatched as usual (reads queued for poll_gets, region writes settled).
Result<std::int64_t> SsdStore::io_now(hal::IoRequest request) {
  request.user_data = ssd_tags::make(ssd_tags::Kind::kNow, 0);
  while (device_->in_flight() >= device_->queue_depth()) {
    if (auto ok = poll_device_once(); !ok) return tl::unexpected(ok.error());
  }
  now_result_.reset();
  if (auto ok = device_->submit({&request, 1}); !ok) return tl::unexpected(ok.error());
  while (!now_result_) {
    if (auto ok = poll_device_once(); !ok) return tl::unexpected(ok.error());
  }
  const std::int64_t result = *now_result_;
  now_result_.reset();
  return result;
}

}  // namespace cxlpool::kvcache
