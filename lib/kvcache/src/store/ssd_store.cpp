// SPDX-License-Identifier: Apache-2.0
// SsdStore write path: puts, erases, sealing, region reuse, FIFO eviction
// with reinsertion of hot entries.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"
#include "outcome_error.hpp"

namespace cxlpool::kvcache {

namespace {

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

}  // namespace

// What put() and put_lent() check before appending: the payload fits a
// region and the index has room for a new key.
KvOutcome SsdStore::admit_put(const ChunkKey& key, std::size_t payload_bytes) {
  if (payload_bytes > max_payload_bytes(config_.region_bytes)) return KvStatus::kTooLarge;
  if (index_.count(key) == 0 && index_.size() >= config_.index_capacity) return make_index_room();
  return KvStatus::kOk;
}

KvResult<std::uint64_t> SsdStore::put(const ChunkKey& key, const NamespaceFingerprint& ns,
                                      std::span<const std::byte> payload) {
  if (const KvOutcome admitted = admit_put(key, payload.size()); !admitted.ok()) return admitted;
  auto seq = append(key, ns, payload, 0);
  if (!seq) return device_failure(seq.error());
  ++stats_.puts;
  return *seq;
}

KvResult<bool> SsdStore::put_lent(const ChunkKey& key, const NamespaceFingerprint& ns,
                                  const SsdLentPayload& payload) {
  const std::span<const std::byte> bytes = payload.bytes;
  if (payload.check_copies && !payload.crc) return KvStatus::kInvalid;
  const bool lendable = config_.sync == SsdSyncPolicy::kPerRegion && !bytes.empty() &&
                        bytes.size() % kSsdBlockBytes == 0 &&
                        reinterpret_cast<std::uintptr_t>(bytes.data()) % device_->mem_alignment() == 0;
  if (!lendable) {
    auto seq = put(key, ns, bytes);
    if (!seq) return seq.outcome;
    return false;
  }
  if (const KvOutcome admitted = admit_put(key, bytes.size()); !admitted.ok()) return admitted;
  auto seq = append(key, ns, bytes, 0, &payload);
  if (!seq) return device_failure(seq.error());
  ++stats_.puts;
  ++stats_.lent_puts;
  return true;
}

KvOutcome SsdStore::erase(const ChunkKey& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return KvStatus::kNotFound;
  const NamespaceFingerprint ns = it->second.ns;
  auto seq = append(key, ns, {}, kEntryTombstone);
  if (!seq) return device_failure(seq.error());
  ++stats_.erases;
  return KvStatus::kOk;
}

Result<std::size_t> SsdStore::erase_namespace(const NamespaceFingerprint& ns) {
  std::vector<ChunkKey> keys;
  for (const auto& [key, slot] : index_) {
    if (slot.ns == ns) keys.push_back(key);
  }
  std::size_t erased = 0;
  for (const ChunkKey& key : keys) {
    if (const KvOutcome o = erase(key); !o.ok()) return outcome_error(o, "ssd store: tombstone write");
    ++erased;
  }
  return erased;
}

void SsdStore::for_each_entry(const std::function<void(const SsdEntryInfo&)>& fn) const {
  for (const auto& [key, slot] : index_) fn(SsdEntryInfo{key, slot.ns, slot.payload_bytes, slot.sequence});
}

Result<void> SsdStore::flush() {
  Result<void> sealed;
  if (region_open() && open_writer().entry_count() != 0) sealed = seal_open_region();
  Result<void> waited = wait_for_writes();
  if (!sealed) return sealed;
  if (!waited) return waited;
  if (write_error_) {
    Error e = std::move(*write_error_);
    write_error_.reset();
    return tl::unexpected(std::move(e));
  }
  return {};
}

// An entry whose lent memory its owner changed before the write: out of
// the index, and a tombstone after it, so that a restart's scan (which
// drops the entry for its CRC) does not bring back an older value.
void SsdStore::drop_changed(const ChunkKey& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  ++stats_.lent_changed;
  const NamespaceFingerprint ns = it->second.ns;
  index_.erase(it);
  (void)append(key, ns, {}, kEntryTombstone);  // a failed write is counted; the entry is out either way
  notify_evicted(key);
}

std::size_t SsdStore::open_lent(const std::function<bool(std::uint64_t token)>& counted) const {
  if (!region_open()) return 0;
  const std::vector<Lent>& lent = regions_[open_region_].lent;
  return static_cast<std::size_t>(std::count_if(lent.begin(), lent.end(), [&](const Lent& l) { return counted(l.token); }));
}

std::size_t SsdStore::reclaim_lent(const std::function<bool(std::uint64_t token)>& wanted) {
  if (!region_open()) return 0;
  std::vector<Lent> back;
  std::erase_if(regions_[open_region_].lent, [&](const Lent& l) {
    if (!wanted(l.token)) return false;
    back.push_back(l);
    return true;
  });
  std::vector<ChunkKey> changed;
  for (const Lent& l : back) {
    std::byte* to = open_writer().data() + l.payload_offset;
    std::memcpy(to, l.bytes, l.length);
    // The entry served from this memory, unless a later put replaced it.
    auto it = index_.find(l.key);
    if (it != index_.end() && it->second.lent == l.bytes && it->second.region == open_region_) {
      Slot& slot = it->second;
      if (slot.check_lent && crc32c({to, slot.payload_bytes}) != slot.payload_crc) changed.push_back(l.key);
      slot.lent = nullptr;
      slot.check_lent = false;
    }
    --lent_;
    ++stats_.lent_reclaimed;
    if (lend_listener_) lend_listener_(l.token);
  }
  // After the copies: a tombstone may seal this region and open another.
  for (const ChunkKey& key : changed) drop_changed(key);
  return back.size();
}

Result<void> SsdStore::close() {
  auto drained = drain_reads();
  auto flushed = flush();
  if (!drained) return drained;
  return flushed;
}

// Appends to the open region (opening or rolling over to the next one as
// needed), indexes the entry and, under kPerCommit, makes it durable.
Result<std::uint64_t> SsdStore::append(const ChunkKey& key, const NamespaceFingerprint& ns,
                                       std::span<const std::byte> payload, std::uint16_t flags,
                                       const SsdLentPayload* lend) {
  if (!region_open()) {
    if (auto ok = open_next_region(); !ok) return tl::unexpected(ok.error());
  }
  const auto add = [&] {
    return lend != nullptr ? open_writer().append_header(key, ns, next_sequence_, payload, lend->crc)
                           : open_writer().append(key, ns, next_sequence_, payload, flags);
  };
  AppendResult at = add();
  if (at.status == AppendStatus::kRegionFull) {
    if (auto ok = seal_open_region(); !ok) return tl::unexpected(ok.error());
    if (auto ok = open_next_region(); !ok) return tl::unexpected(ok.error());
    at = add();
  }
  if (at.status != AppendStatus::kOk) {
    // Cannot happen: put() checked the size and the region is fresh.
    return fail(EFBIG, "ssd store: entry of " + std::to_string(payload.size()) + " bytes does not fit a region");
  }
  const std::uint64_t seq = next_sequence_++;
  regions_[open_region_].keys.push_back(key);
  if ((flags & kEntryTombstone) != 0) {
    index_.erase(key);
  } else {
    index_[key] = Slot{open_region_,
                       at.payload_offset,
                       static_cast<std::uint32_t>(payload.size()),
                       at.payload_crc,
                       seq,
                       ns,
                       0,
                       lend != nullptr ? payload.data() : nullptr,
                       lend != nullptr && lend->check_copies};
  }
  if (lend != nullptr) {
    regions_[open_region_].lent.push_back(Lent{key, at.payload_offset, static_cast<std::uint32_t>(payload.size()),
                                               payload.data(), lend->buffer_index, lend->token});
    ++lent_;
  }
  if (config_.sync == SsdSyncPolicy::kPerCommit) {
    if (auto ok = commit_entry(at); !ok) {
      drop_entry(key, seq);
      abandon_open_region();
      return tl::unexpected(ok.error());
    }
    durable_sequence_ = seq;
  }
  return seq;
}

Result<void> SsdStore::write_now(std::uint64_t offset, std::span<const std::byte> bytes) {
  hal::IoRequest r;
  r.op = hal::IoOp::kWrite;
  r.offset = offset;
  r.buffer = const_cast<std::byte*>(bytes.data());  // writes only read the buffer
  r.length = static_cast<std::uint32_t>(bytes.size());
  auto got = io_now(r);
  if (got && *got == static_cast<std::int64_t>(bytes.size())) {
    stats_.bytes_written += bytes.size();
    return {};
  }
  ++stats_.write_errors;
  stats_.last_write_error = !got ? got.error().code : *got < 0 ? static_cast<int>(-*got) : EIO;
  if (!got) return tl::unexpected(got.error());
  if (*got < 0) return fail(static_cast<int>(-*got), "ssd store: write at " + std::to_string(offset));
  return fail(EIO, "ssd store: short write at " + std::to_string(offset));
}

Result<void> SsdStore::sync_now() {
  hal::IoRequest r;
  r.op = hal::IoOp::kFdatasync;
  auto got = io_now(r);
  if (got && *got == 0) {
    ++stats_.syncs;
    return {};
  }
  ++stats_.write_errors;
  stats_.last_write_error = !got ? got.error().code : static_cast<int>(-*got);
  if (!got) return tl::unexpected(got.error());
  return fail(static_cast<int>(-*got), "ssd store: fdatasync");
}

// Entries are committed one at a time in region order, so when this returns
// every entry up to this one is durable (the rule of docs/kvstore-format.md).
// The region's open header was written when it was opened and is synced here
// with the first entry.
Result<void> SsdStore::commit_entry(const AppendResult& at) {
  if (auto ok = write_now(region_base(open_region_) + at.offset, open_writer().bytes(at.offset, at.extent)); !ok) {
    return ok;
  }
  return sync_now();
}

// kPerRegion: the region goes to the device's queue with its buffer, and
// its entries stay served from that buffer until the write completes.
// kPerCommit: every entry is on the device already; only the sealed header
// is written and synced, at once.
Result<void> SsdStore::seal_open_region() {
  const std::uint32_t r = open_region_;
  const std::int32_t b = open_buffer_;
  const std::span<const std::byte> image = open_writer().seal();
  open_buffer_ = kNoBuffer;
  if (config_.sync == SsdSyncPolicy::kPerRegion) {
    if (auto ok = start_region_write(r, image); !ok) {
      fail_region(r);  // nothing of it is known to be on the device
      return ok;
    }
    ++stats_.regions_sealed;
    return {};
  }
  Result<void> ok = write_now(region_base(r), writers_[b].header_block());
  if (ok) ok = sync_now();
  regions_[r].buffer = kNoBuffer;
  free_buffers_.push_back(b);
  // On failure the header stays unsealed, which the scan reads as an open
  // region: its entries are durable already.
  if (!ok) return ok;
  ++stats_.regions_sealed;
  durable_sequence_ = next_sequence_ - 1;
  return {};
}

// A commit failed: the entry may be half on the device, so nothing may follow
// it in this region. Its acknowledged entries are durable and stay readable
// from the device.
void SsdStore::abandon_open_region() {
  (void)open_writer().seal();
  regions_[open_region_].buffer = kNoBuffer;
  free_buffers_.push_back(open_buffer_);
  open_buffer_ = kNoBuffer;
}

// A region buffer to fill; waits for a region write to complete when every
// buffer is in flight (the device is then the bottleneck).
Result<std::int32_t> SsdStore::take_free_buffer() {
  if (free_buffers_.empty()) ++stats_.write_stalls;
  while (free_buffers_.empty()) {
    if (auto ok = poll_device_once(); !ok) return tl::unexpected(ok.error());
  }
  const std::int32_t b = free_buffers_.back();
  free_buffers_.pop_back();
  return b;
}

KvOutcome SsdStore::make_index_room() {
  while (index_.size() >= config_.index_capacity) {
    if (fifo_.empty() || (region_open() && fifo_.front() == open_region_)) return KvStatus::kRejected;
    const std::uint32_t r = fifo_.front();
    if (regions_[r].in_flight) {
      // Its write may fail and drop it meanwhile: look again afterwards.
      if (auto ok = wait_for_region(r); !ok) return device_failure(ok.error());
      continue;
    }
    if (auto ok = evict_oldest(false); !ok) return device_failure(ok.error());
    free_.push_back(r);
  }
  return KvStatus::kOk;
}

Result<void> SsdStore::open_next_region() {
  auto buffer = take_free_buffer();
  if (!buffer) return tl::unexpected(buffer.error());
  std::vector<Hot> hot;
  while (free_.empty()) {
    const std::uint32_t oldest = fifo_.front();
    if (regions_[oldest].in_flight) {
      // A tiny log: its oldest region is still on its way to the device.
      if (auto ok = wait_for_region(oldest); !ok) {
        free_buffers_.push_back(*buffer);
        return ok;
      }
      continue;
    }
    if (auto ok = evict_oldest(true, &hot); !ok) {
      free_buffers_.push_back(*buffer);
      return ok;
    }
    free_.push_back(oldest);
  }
  const std::uint32_t r = free_.front();
  free_.pop_front();
  regions_[r] = Region{next_generation_, {}, *buffer, false};
  open_buffer_ = *buffer;
  open_writer().open(r, next_generation_++);
  open_region_ = r;
  fifo_.push_back(r);
  if (config_.sync == SsdSyncPolicy::kPerCommit) {
    if (auto ok = write_now(region_base(r), open_writer().header_block()); !ok) {
      abandon_open_region();
      return ok;
    }
  }
  for (std::size_t i = 0; i < hot.size(); ++i) {
    // The budget keeps the reinserted entries well inside a fresh region.
    auto seq = append(hot[i].key, hot[i].ns, hot[i].payload, 0);
    if (!seq) {
      for (std::size_t j = i; j < hot.size(); ++j) notify_evicted(hot[j].key);
      return tl::unexpected(seq.error());
    }
    ++stats_.reinsertions;
  }
  return {};
}

// Removes the oldest region from the FIFO and its entries from the index.
// With `hot`, entries read at least reinsert_min_hits times are first read
// back (CRC-checked) into hot, within the reinsertion budget.
// The region is not in flight (the callers wait for that).
Result<void> SsdStore::evict_oldest(bool reinsert, std::vector<Hot>* hot) {
  if (auto ok = drain_reads(); !ok) return ok;  // no read may see the region being reused
  const std::uint32_t r = fifo_.front();
  fifo_.pop_front();
  const std::uint64_t budget = std::uint64_t{config_.region_bytes} * config_.reinsert_max_percent / 100;
  std::uint64_t spent = 0;
  std::unique_ptr<std::byte, FreeDeleter> scratch;
  for (const ChunkKey& key : regions_[r].keys) {
    auto it = index_.find(key);
    if (it == index_.end() || it->second.region != r) continue;
    const Slot slot = it->second;
    index_.erase(it);
    ++stats_.entries_evicted;
    const bool is_hot = reinsert && hot != nullptr && config_.reinsert_min_hits != 0 &&
                        slot.hits >= config_.reinsert_min_hits;
    if (!is_hot) {
      notify_evicted(key);
      continue;
    }
    const std::uint64_t extent = entry_extent(slot.payload_bytes);
    if (spent + extent > budget) {
      ++stats_.reinsert_skipped;
      notify_evicted(key);
      continue;
    }
    if (!scratch) {
      scratch.reset(static_cast<std::byte*>(std::aligned_alloc(kSsdBlockBytes, config_.region_bytes)));
      if (!scratch) {
        notify_evicted(key);
        return fail(ENOMEM, "ssd store: reinsertion buffer");
      }
    }
    hal::IoRequest read;
    read.op = hal::IoOp::kRead;
    read.offset = region_base(r) + slot.payload_offset;
    read.buffer = scratch.get();
    read.length = read_buffer_bytes(slot.payload_bytes);
    auto got = io_now(read);
    if (!got || !check_read(slot, *got, scratch.get(), std::nullopt).ok()) {
      ++stats_.reinsert_skipped;
      notify_evicted(key);
      continue;
    }
    spent += extent;
    hot->push_back(Hot{key, slot.ns, {scratch.get(), scratch.get() + slot.payload_bytes}});
  }
  regions_[r] = Region{};
  ++stats_.regions_evicted;
  return {};
}

}  // namespace cxlpool::kvcache
