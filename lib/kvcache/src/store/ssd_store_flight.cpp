// SPDX-License-Identifier: Apache-2.0
// SsdStore's asynchronous region writes (kPerRegion): a sealed region's
// buffer is written while the next region fills another buffer; one
// fdatasync covers every region written since the previous one; a region
// counts as durable once both completed, in seal order. A failed write or
// fdatasync takes the entries of its regions out of the index.
//
// A region holding lent payloads (put_lent) goes out as several writes: the
// buffer's pieces (headers, copied entries) and each lent payload from the
// caller's memory. The device ends up with the same bytes as from one write
// of the whole image; the region counts as written when every piece did, and
// the lent memory is handed back then (or when the region fails).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include "cxlpool/kvcache/ssd_store.hpp"
#include "ssd_store_tags.hpp"

namespace cxlpool::kvcache {

Result<void> SsdStore::start_region_write(std::uint32_t region, std::span<const std::byte> image) {
  Region& reg = regions_[region];
  const std::int32_t b = reg.buffer;
  std::vector<hal::IoRequest> pieces;
  pieces.reserve(2 * reg.lent.size() + 1);
  const auto piece = [&](std::uint32_t at, std::uint32_t length, const std::byte* from, std::int32_t index) {
    hal::IoRequest r;
    r.op = hal::IoOp::kWrite;
    r.offset = region_base(region) + at;
    r.buffer = const_cast<std::byte*>(from);  // writes only read the buffer
    r.length = length;
    r.user_data = ssd_tags::make(ssd_tags::Kind::kRegionWrite, region);
    r.buffer_index = index;
    pieces.push_back(r);
  };
  const std::int32_t own_index = fixed_write_base_ == hal::kNoRegisteredBuffer ? hal::kNoRegisteredBuffer
                                                                               : fixed_write_base_ + b;
  const auto size = static_cast<std::uint32_t>(image.size());
  std::uint32_t cursor = 0;
  for (const Lent& l : reg.lent) {
    if (l.payload_offset > cursor) piece(cursor, l.payload_offset - cursor, image.data() + cursor, own_index);
    piece(l.payload_offset, l.length, l.bytes, fixed_write_base_ == hal::kNoRegisteredBuffer
                                                    ? hal::kNoRegisteredBuffer
                                                    : l.buffer_index);
    cursor = l.payload_offset + l.length;
  }
  if (size > cursor) piece(cursor, size - cursor, image.data() + cursor, own_index);

  // Counted before the first submit: completions of early pieces may be
  // reaped while later ones wait for queue room.
  reg.writes_pending = static_cast<std::uint32_t>(pieces.size());
  reg.write_error = 0;
  reg.in_flight = true;
  flights_.push_back(Flight{region, reg.generation, next_sequence_ - 1, Flight::State::kWriting});
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto ok = submit_now(pieces[i]);
    if (ok) continue;
    ++stats_.write_errors;
    stats_.last_write_error = ok.error().code;
    if (i == 0) {  // nothing reached the device: the caller fails the region
      flights_.pop_back();
      reg.in_flight = false;
      reg.writes_pending = 0;
      return ok;
    }
    // The pieces already on the device finish first; the region fails then.
    reg.write_error = ok.error().code;
    reg.writes_pending -= static_cast<std::uint32_t>(pieces.size() - i);
    stats_.bytes_written += image.size();
    if (reg.writes_pending == 0) finish_region_write(region);
    return {};
  }
  stats_.bytes_written += image.size();  // issued: the wear counts whether or not it completes
  return {};
}

// Waits for queue room first: batched reads leave write_reserve_ entries
// free, so this only waits when the queue is full of writes.
Result<void> SsdStore::submit_now(hal::IoRequest request) {
  while (device_->in_flight() >= device_->queue_depth()) {
    if (auto ok = poll_device_once(); !ok) return ok;
  }
  return device_->submit({&request, 1});
}

void SsdStore::handle_write_completion(const hal::IoCompletion& c) {
  const auto region = static_cast<std::uint32_t>(ssd_tags::value_of(c.user_data));
  auto it = std::find_if(flights_.begin(), flights_.end(), [&](const Flight& f) {
    return f.region == region && f.state == Flight::State::kWriting;
  });
  if (it == flights_.end()) return;  // not ours
  Region& reg = regions_[region];
  if (c.result != static_cast<std::int64_t>(c.length)) {
    ++stats_.write_errors;
    stats_.last_write_error = c.result < 0 ? static_cast<int>(-c.result) : EIO;
    if (reg.write_error == 0) reg.write_error = stats_.last_write_error;
  }
  if (reg.writes_pending > 0) --reg.writes_pending;
  if (reg.writes_pending == 0) finish_region_write(region);
}

// Every write of the region's image completed (or was never issued).
void SsdStore::finish_region_write(std::uint32_t region) {
  auto it = std::find_if(flights_.begin(), flights_.end(), [&](const Flight& f) {
    return f.region == region && f.state == Flight::State::kWriting;
  });
  if (it == flights_.end()) return;
  Region& reg = regions_[region];
  if (reg.write_error != 0) {
    if (!write_error_) {
      write_error_ = Error{reg.write_error, "ssd store: region " + std::to_string(region) +
                                                " write failed or was short (its entries dropped)"};
    }
    flights_.erase(it);
    fail_region(region);
    retire_flights();
    return;
  }
  // The device has the bytes: reads go there from now on, and the buffer
  // and the lent payloads can take new data.
  return_lent(reg);
  free_buffers_.push_back(reg.buffer);
  reg.buffer = kNoBuffer;
  it->state = Flight::State::kWritten;
  ++written_unsynced_;
  if (!sync_in_flight_) start_group_sync();
}

// Never waits: with the queue full it is retried after the next completion
// (dispatch).
void SsdStore::start_group_sync() {
  if (written_unsynced_ == 0 || sync_in_flight_ || device_->in_flight() >= device_->queue_depth()) return;
  hal::IoRequest r;
  r.op = hal::IoOp::kFdatasync;
  r.user_data = ssd_tags::make(ssd_tags::Kind::kGroupSync, 0);
  if (auto ok = device_->submit({&r, 1}); !ok) {
    settle_sync(Flight::State::kWritten, ok.error().code);  // as if it had failed
    return;
  }
  for (Flight& f : flights_) {
    if (f.state == Flight::State::kWritten) f.state = Flight::State::kSyncing;
  }
  written_unsynced_ = 0;
  sync_in_flight_ = true;
}

void SsdStore::handle_sync_completion(const hal::IoCompletion& c) {
  sync_in_flight_ = false;
  settle_sync(Flight::State::kSyncing, c.result < 0 ? static_cast<int>(-c.result) : 0);
}

// The flights in state `which` are durable (err 0) or dropped.
void SsdStore::settle_sync(Flight::State which, int err) {
  if (err == 0) {
    ++stats_.syncs;
  } else {
    ++stats_.write_errors;
    stats_.last_write_error = err;
    if (!write_error_) {
      write_error_ = Error{err, "ssd store: fdatasync after region writes failed (their entries dropped)"};
    }
  }
  for (Flight& f : flights_) {
    if (f.state != which) continue;
    if (which == Flight::State::kWritten) --written_unsynced_;
    f.state = Flight::State::kDone;
    if (err == 0) {
      regions_[f.region].in_flight = false;
    } else {
      fail_region(f.region);
    }
  }
  retire_flights();
}

// Drops every entry of a region whose bytes may not be on the device and
// makes it free. Keys replaced since (indexed in another region) stay.
void SsdStore::fail_region(std::uint32_t region) {
  Region& reg = regions_[region];
  return_lent(reg);
  for (const ChunkKey& key : reg.keys) {
    auto it = index_.find(key);
    if (it != index_.end() && it->second.region == region) {
      index_.erase(it);
      ++stats_.write_dropped;
      notify_evicted(key);
    }
  }
  if (reg.buffer != kNoBuffer) free_buffers_.push_back(reg.buffer);
  reg = Region{};
  fifo_.erase(std::remove(fifo_.begin(), fifo_.end(), region), fifo_.end());
  free_.push_back(region);
}

void SsdStore::return_lent(Region& reg) {
  for (const Lent& l : reg.lent) {
    --lent_;
    if (lend_listener_) lend_listener_(l.token);
  }
  reg.lent.clear();
}

// Settled flights leave in seal order, advancing durable_sequence_.
void SsdStore::retire_flights() {
  while (!flights_.empty() && flights_.front().state == Flight::State::kDone) {
    durable_sequence_ = std::max(durable_sequence_, flights_.front().last_sequence);
    flights_.pop_front();
  }
  // With nothing before them in flight, a failed region's successors count.
  if (flights_.empty() && !region_open()) durable_sequence_ = std::max(durable_sequence_, next_sequence_ - 1);
}

Result<void> SsdStore::wait_for_region(std::uint32_t region) {
  while (regions_[region].in_flight) {
    if (auto ok = poll_device_once(); !ok) return ok;
  }
  return {};
}

Result<void> SsdStore::wait_for_writes() {
  while (!flights_.empty()) {
    if (auto ok = poll_device_once(); !ok) return ok;
  }
  return {};
}

Result<std::int32_t> SsdStore::register_buffers(std::span<const iovec> extra) {
  std::vector<iovec> iov;
  for (const RegionWriter& w : writers_) iov.push_back(iovec{w.data(), w.region_bytes()});
  const auto staging = static_cast<std::int32_t>(iov.size());
  for (const auto& s : staging_) iov.push_back(iovec{s.get(), align_up_block(config_.staging_bytes)});
  const auto base = static_cast<std::int32_t>(iov.size());
  iov.insert(iov.end(), extra.begin(), extra.end());
  if (auto ok = device_->register_buffers(iov); !ok) {
    // The old set may be gone with the attempt: keep at least the region
    // and staging buffers registered.
    fixed_write_base_ = hal::kNoRegisteredBuffer;
    staging_base_ = hal::kNoRegisteredBuffer;
    iov.resize(static_cast<std::size_t>(base));
    if (device_->register_buffers(iov)) {
      fixed_write_base_ = 0;
      if (!staging_.empty()) staging_base_ = staging;
    }
    return tl::unexpected(ok.error());
  }
  fixed_write_base_ = 0;
  if (!staging_.empty()) staging_base_ = staging;
  return base;
}

bool SsdStore::release_staging() {
  if (staging_.empty()) return true;
  if (free_staging_.size() != staging_.size()) return false;
  if (staging_base_ != hal::kNoRegisteredBuffer) {
    for (std::size_t i = 0; i < staging_.size(); ++i) {
      (void)device_->update_buffer(static_cast<std::uint32_t>(staging_base_) + static_cast<std::uint32_t>(i),
                                   iovec{nullptr, 0});
    }
  }
  staging_released_ = staging_.size();
  staging_.clear();
  free_staging_.clear();
  return true;
}

void SsdStore::restore_staging() {
  if (staging_released_ == 0 || staging_base_ == hal::kNoRegisteredBuffer) return;
  const std::size_t bytes = align_up_block(config_.staging_bytes);
  for (std::size_t i = 0; i < staging_released_; ++i) {
    std::unique_ptr<std::byte, StagingFree> buffer(static_cast<std::byte*>(std::aligned_alloc(kSsdBlockBytes, bytes)));
    if (!buffer) break;
    const auto index = static_cast<std::uint32_t>(staging_base_) + static_cast<std::uint32_t>(i);
    if (!device_->update_buffer(index, iovec{buffer.get(), bytes})) break;
    staging_.push_back(std::move(buffer));
  }
  for (std::size_t i = staging_.size(); i > 0; --i) free_staging_.push_back(static_cast<std::int32_t>(i - 1));
  staging_released_ = 0;
}

}  // namespace cxlpool::kvcache
