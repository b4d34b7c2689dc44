// SPDX-License-Identifier: Apache-2.0
// The access-report ring: a single-producer / single-consumer queue in a
// memfd shared between one client connection (producer) and cxlpoold
// (consumer). Clients publish batches of "object [offset, offset+length) of
// region R was accessed N times" without a syscall; the daemon drains them on
// its own schedule. Layout: docs/protocol.md §9.1.
//
// The consumer never trusts the mapping: the client may write any byte at any
// moment. It keeps its own copy of everything it relies on (capacity,
// consumer index), reads the producer index once per drain and bounds it,
// copies each entry out before looking at it, and caps the work of one drain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/shm_ring.hpp"

namespace cxlpool::proto {

inline constexpr uint32_t kAccessRingMagic = 0x52415843;  // "CXAR" little-endian
inline constexpr uint32_t kAccessRingVersion = 1;
inline constexpr uint32_t kAccessRingHeaderBytes = 256;
inline constexpr uint32_t kAccessRingDefaultEntries = 16384;

// Entry flags.
inline constexpr uint32_t kAccessWrite = 1u << 0;
inline constexpr uint32_t kAccessKnownFlags = kAccessWrite;

// One report: `count` accesses of bytes [offset, offset + length) of pool
// region `region_id`. 32 bytes, two per cache line.
struct AccessRingEntry {
  uint64_t region_id = 0;
  uint64_t offset = 0;
  uint32_t length = 0;    // > 0
  uint32_t count = 0;     // > 0: identical accesses merged by the producer
  uint32_t flags = 0;     // kAccess*; unknown bits are rejected
  uint32_t reserved = 0;  // 0
  bool operator==(const AccessRingEntry&) const = default;
};
static_assert(sizeof(AccessRingEntry) == 32);

// The shared header. Producer- and consumer-written words sit on separate
// cache lines so that neither side's stores invalidate the other's reads.
struct alignas(64) AccessRingHeader {
  uint32_t magic;        // kAccessRingMagic
  uint32_t version;      // kAccessRingVersion
  uint32_t entries;      // power of two
  uint32_t entry_size;   // sizeof(AccessRingEntry)
  uint32_t header_bytes; // kAccessRingHeaderBytes: entries start here
  uint8_t pad0[44];
  alignas(64) uint64_t producer;  // entries ever published (free-running)
  uint8_t pad1[56];
  alignas(64) uint64_t consumer;  // entries ever consumed (free-running)
  uint8_t pad2[56];
  alignas(64) uint64_t dropped;   // entries the producer could not publish: ring full
  uint8_t pad3[56];
};
static_assert(sizeof(AccessRingHeader) == kAccessRingHeaderBytes);

inline constexpr bool access_ring_entries_valid(uint32_t entries) {
  return entries >= 1 && entries <= (1u << 20) && (entries & (entries - 1)) == 0;
}
inline constexpr uint64_t access_ring_bytes(uint32_t entries) {
  return kAccessRingHeaderBytes + uint64_t{entries} * sizeof(AccessRingEntry);
}

// A mapping of a ring's memfd, unmapped on destruction.
class AccessRingMemory {
 public:
  // Daemon side: a fresh memfd of access_ring_bytes(entries), sealed against
  // shrinking and growing (so no client can truncate it under the daemon's
  // mapping), mapped and initialized. EINVAL: entries not a power of two in
  // 1..kMaxAccessRingEntries; errno of memfd_create/ftruncate/fcntl/mmap.
  static Result<AccessRingMemory> create(uint32_t entries);
  // Client side: maps `ring_bytes` of a received ring descriptor read-write.
  static Result<AccessRingMemory> map(int fd, uint64_t ring_bytes);

  std::span<std::byte> bytes() const { return mapping_.bytes(); }
  int fd() const { return mapping_.fd(); }
  // Hands the descriptor over (to send it); the mapping stays.
  UniqueFd take_fd() { return mapping_.take_fd(); }
  uint32_t entries() const { return entries_; }

 private:
  ShmMapping mapping_;
  uint32_t entries_ = 0;
};

// Writes a fresh header for `entries` entries. EINVAL: bad count, or the
// mapping is smaller than access_ring_bytes(entries) or misaligned.
Result<void> access_ring_init(std::span<std::byte> mapping, uint32_t entries);

// The client's side. Not thread-safe: one producer per ring; callers
// serialize (libcxlpool holds a lock around its batch publish).
class AccessRingProducer {
 public:
  // Checks the header (magic, version, sizes against the mapping). EPROTO
  // when it does not describe a ring that fits the mapping.
  static Result<AccessRingProducer> attach(std::span<std::byte> mapping);

  AccessRingProducer() = default;

  // Publishes as many of `entries` as fit, in order, with one release store;
  // the rest are counted in the header's dropped counter. Never blocks.
  // Returns how many were published.
  size_t try_push(std::span<const AccessRingEntry> entries);

  uint32_t capacity() const { return mask_ + 1; }
  uint64_t dropped() const;  // this ring's dropped counter

 private:
  AccessRingHeader* header_ = nullptr;
  AccessRingEntry* slots_ = nullptr;
  uint32_t mask_ = 0;
  uint64_t head_ = 0;         // our producer index (we are its only writer)
  uint64_t cached_tail_ = 0;  // last consumer index seen; refreshed when the ring looks full
};

// What one drain found besides the entries it returned.
struct AccessDrainStats {
  uint64_t entries = 0;          // well-formed entries appended to the output
  uint64_t rejected = 0;         // malformed entries (zero length or count, unknown flags)
  uint64_t producer_dropped = 0; // increase of the producer's dropped counter since the last drain
};

// The daemon's side. Trusts nothing in the mapping but its size.
class AccessRingConsumer {
 public:
  // Per drain: at most this many entries, so one client cannot stall the daemon.
  static constexpr size_t kMaxDrainPerCall = 65536;
  // A producer's dropped counter may grow at most this much per drain; beyond
  // it the ring is treated as garbage.
  static constexpr uint64_t kMaxDroppedStep = uint64_t{1} << 40;

  // `entries` is what the daemon created the ring with; the header's copy
  // is not consulted. EINVAL: the mapping is too small for it.
  static Result<AccessRingConsumer> attach(std::span<std::byte> mapping, uint32_t entries);

  AccessRingConsumer() = default;

  // Appends up to min(max_entries, kMaxDrainPerCall) published entries to
  // `out` and releases their slots to the producer. A broken ring (producer
  // index out of bounds, header magic/geometry overwritten, dropped counter
  // gone backwards or absurd) is marked broken and never read again.
  AccessDrainStats drain(std::vector<AccessRingEntry>& out, size_t max_entries = kMaxDrainPerCall);

  bool broken() const { return broken_; }
  uint32_t capacity() const { return mask_ + 1; }
  uint64_t consumed() const { return tail_; }

 private:
  bool header_intact() const;

  AccessRingHeader* header_ = nullptr;
  const std::byte* slots_ = nullptr;
  uint32_t mask_ = 0;
  uint64_t tail_ = 0;          // authoritative consumer index: never read back from the mapping
  uint64_t dropped_seen_ = 0;  // producer's dropped counter at the previous drain
  bool broken_ = false;
};

// Entry checks that need no knowledge of regions (the consumer applies them).
bool access_entry_well_formed(const AccessRingEntry& entry);

}  // namespace cxlpool::proto
