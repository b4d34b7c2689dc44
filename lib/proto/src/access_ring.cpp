// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/proto/access_ring.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>

namespace cxlpool::proto {
namespace {

using Index = std::atomic_ref<uint64_t>;

bool fits(std::span<std::byte> mapping, uint32_t entries) {
  return access_ring_entries_valid(entries) && mapping.size() >= access_ring_bytes(entries) &&
         reinterpret_cast<uintptr_t>(mapping.data()) % alignof(AccessRingHeader) == 0;
}

}  // namespace

bool access_entry_well_formed(const AccessRingEntry& e) {
  return e.length != 0 && e.count != 0 && (e.flags & ~kAccessKnownFlags) == 0 && e.reserved == 0 &&
         e.offset <= UINT64_MAX - e.length;
}

// ------------------------------------------------------------------ memory

Result<AccessRingMemory> AccessRingMemory::create(uint32_t entries) {
  if (!access_ring_entries_valid(entries)) {
    return fail(EINVAL, "access ring: " + std::to_string(entries) + " entries is not a power of two up to 2^20");
  }
  // Sealed: the client maps it read-write and can neither shrink it under
  // the daemon's mapping (SIGBUS on the next drain) nor grow it.
  auto mapping = ShmMapping::create("cxlpool-access-ring", access_ring_bytes(entries));
  if (!mapping) return tl::unexpected(mapping.error());
  if (auto ok = access_ring_init(mapping->bytes(), entries); !ok) return tl::unexpected(ok.error());
  AccessRingMemory memory;
  memory.mapping_ = std::move(*mapping);
  memory.entries_ = entries;
  return memory;
}

Result<AccessRingMemory> AccessRingMemory::map(int fd, uint64_t ring_bytes) {
  if (ring_bytes < kAccessRingHeaderBytes || ring_bytes > access_ring_bytes(1u << 20)) {
    return fail(EPROTO, "access ring: size " + std::to_string(ring_bytes) + " out of range");
  }
  auto mapping = ShmMapping::map(fd, ring_bytes);
  if (!mapping) return tl::unexpected(mapping.error());
  AccessRingMemory memory;
  memory.mapping_ = std::move(*mapping);
  return memory;
}

Result<void> access_ring_init(std::span<std::byte> mapping, uint32_t entries) {
  if (!fits(mapping, entries)) return fail(EINVAL, "access ring: mapping too small or misaligned");
  std::memset(mapping.data(), 0, kAccessRingHeaderBytes);
  auto* h = reinterpret_cast<AccessRingHeader*>(mapping.data());
  h->magic = kAccessRingMagic;
  h->version = kAccessRingVersion;
  h->entries = entries;
  h->entry_size = sizeof(AccessRingEntry);
  h->header_bytes = kAccessRingHeaderBytes;
  return {};
}

// ---------------------------------------------------------------- producer

Result<AccessRingProducer> AccessRingProducer::attach(std::span<std::byte> mapping) {
  if (mapping.size() < kAccessRingHeaderBytes ||
      reinterpret_cast<uintptr_t>(mapping.data()) % alignof(AccessRingHeader) != 0) {
    return fail(EPROTO, "access ring: mapping smaller than its header");
  }
  auto* h = reinterpret_cast<AccessRingHeader*>(mapping.data());
  if (h->magic != kAccessRingMagic || h->version != kAccessRingVersion) {
    return fail(EPROTO, "access ring: bad magic or version");
  }
  if (h->entry_size != sizeof(AccessRingEntry) || h->header_bytes != kAccessRingHeaderBytes ||
      !fits(mapping, h->entries)) {
    return fail(EPROTO, "access ring: header geometry does not match the mapping");
  }
  AccessRingProducer p;
  p.header_ = h;
  p.slots_ = reinterpret_cast<AccessRingEntry*>(mapping.data() + kAccessRingHeaderBytes);
  p.mask_ = h->entries - 1;
  p.head_ = Index(h->producer).load(std::memory_order_relaxed);
  p.cached_tail_ = Index(h->consumer).load(std::memory_order_acquire);
  return p;
}

size_t AccessRingProducer::try_push(std::span<const AccessRingEntry> entries) {
  if (header_ == nullptr || entries.empty()) return 0;
  const uint64_t capacity = uint64_t{mask_} + 1;
  uint64_t free_slots = capacity - (head_ - cached_tail_);
  if (free_slots < entries.size()) {
    // Acquire pairs with the consumer's release: its reads of the slots it
    // gave back are finished before we overwrite them.
    cached_tail_ = Index(header_->consumer).load(std::memory_order_acquire);
    const uint64_t used = head_ - cached_tail_;
    // A consumer index ahead of ours would be the daemon's bug; treat as full.
    free_slots = used <= capacity ? capacity - used : 0;
  }
  const size_t n = static_cast<size_t>(std::min<uint64_t>(free_slots, entries.size()));
  for (size_t i = 0; i < n; ++i) slots_[(head_ + i) & mask_] = entries[i];
  if (n > 0) {
    head_ += n;
    Index(header_->producer).store(head_, std::memory_order_release);
  }
  if (n < entries.size()) {
    Index(header_->dropped).fetch_add(entries.size() - n, std::memory_order_relaxed);
  }
  return n;
}

uint64_t AccessRingProducer::dropped() const {
  return header_ ? Index(header_->dropped).load(std::memory_order_relaxed) : 0;
}

// ---------------------------------------------------------------- consumer

Result<AccessRingConsumer> AccessRingConsumer::attach(std::span<std::byte> mapping, uint32_t entries) {
  if (!fits(mapping, entries)) return fail(EINVAL, "access ring: mapping too small for its entries");
  AccessRingConsumer c;
  c.header_ = reinterpret_cast<AccessRingHeader*>(mapping.data());
  c.slots_ = mapping.data() + kAccessRingHeaderBytes;
  c.mask_ = entries - 1;
  // The daemon attaches right after creating the ring: both indexes are 0.
  c.tail_ = Index(c.header_->consumer).load(std::memory_order_relaxed);
  c.dropped_seen_ = Index(c.header_->dropped).load(std::memory_order_relaxed);
  return c;
}

bool AccessRingConsumer::header_intact() const {
  // Read through atomic_ref: the producer may be writing these words now.
  auto word = [](uint32_t& w) { return std::atomic_ref<uint32_t>(w).load(std::memory_order_relaxed); };
  return word(header_->magic) == kAccessRingMagic && word(header_->version) == kAccessRingVersion &&
         word(header_->entries) == mask_ + 1 && word(header_->entry_size) == sizeof(AccessRingEntry) &&
         word(header_->header_bytes) == kAccessRingHeaderBytes;
}

AccessDrainStats AccessRingConsumer::drain(std::vector<AccessRingEntry>& out, size_t max_entries) {
  AccessDrainStats stats;
  if (header_ == nullptr || broken_) return stats;
  if (!header_intact()) {
    broken_ = true;
    return stats;
  }
  // Read once: the value may change under us, the bound check holds for the
  // copy we act on.
  const uint64_t head = Index(header_->producer).load(std::memory_order_acquire);
  const uint64_t capacity = uint64_t{mask_} + 1;
  const uint64_t available = head - tail_;  // unsigned: a head behind tail is huge
  if (available > capacity) {
    broken_ = true;
    return stats;
  }
  const uint64_t dropped = Index(header_->dropped).load(std::memory_order_relaxed);
  if (dropped < dropped_seen_ || dropped - dropped_seen_ > kMaxDroppedStep) {
    broken_ = true;
    return stats;
  }
  stats.producer_dropped = dropped - dropped_seen_;
  dropped_seen_ = dropped;

  const uint64_t n = std::min<uint64_t>({available, max_entries, kMaxDrainPerCall});
  out.reserve(out.size() + n);
  for (uint64_t i = 0; i < n; ++i) {
    AccessRingEntry e;
    std::memcpy(&e, slots_ + ((tail_ + i) & mask_) * sizeof(AccessRingEntry), sizeof e);
    if (access_entry_well_formed(e)) {
      out.push_back(e);
      ++stats.entries;
    } else {
      ++stats.rejected;
    }
  }
  tail_ += n;
  // Release: our copies are complete before the producer may reuse the slots.
  if (n > 0) Index(header_->consumer).store(tail_, std::memory_order_release);
  return stats;
}

}  // namespace cxlpool::proto
