// SPDX-License-Identifier: Apache-2.0
#pragma once
// The chunk index: key -> where the chunk lives. A fixed-capacity open-
// addressing table (linear probing, one control byte per slot holding 7 hash
// bits, backward-shift deletion, no tombstones), sized once so lookups never
// rehash and memory stays bounded. Not thread-safe: the store serializes it.
//
// Pins are read leases: a pinned chunk must not be moved or freed. Erasing or
// dropping a pinned chunk marks it doomed instead; lookups no longer see it
// and the last unpin erases it and hands the entry back so the store can free
// its slot.
//
// Every call answers with a KvStatus (kv_status.hpp): the store probes the
// index on every request, and a miss must cost no allocation.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/kvcache/kv_status.hpp"
#include "cxlpool/kvcache/tier.hpp"

namespace cxlpool::kvcache {

// Where a chunk's bytes are and what the store knows about them.
struct ChunkInfo {
  KvTier tier = KvTier::kDram;
  std::uint8_t flags = 0;  // kChunk* below
  std::uint32_t ns_id = 0;  // the store's small id of the chunk's namespace
  std::uint64_t offset = 0;  // arena slot offset, or SSD byte offset
  std::uint32_t length = 0;  // bytes
  // crc32c of the arena chunk's `length` bytes, taken as they were written
  // (kChunkCrcKnown): a demotion to the log need not read them again.
  std::uint32_t payload_crc = 0;
  std::uint64_t sequence = 0;  // commit sequence (SSD log order, recency)
};
static_assert(sizeof(ChunkInfo) == 32, "payload_crc fills padding: the index's entries keep their size");

inline constexpr std::uint8_t kChunkDoomed = 1u << 0;   // erased while pinned
inline constexpr std::uint8_t kChunkWriting = 1u << 1;  // reserved by put, not committed
inline constexpr std::uint8_t kChunkSsdCopy = 1u << 2;  // also on SSD (clean to drop)
inline constexpr std::uint8_t kChunkCrcKnown = 1u << 3; // payload_crc holds the arena chunk's crc32c
// Its commit was answered while its copy from the put window into its arena
// slot still runs: nobody may read the slot until the copy is in and checked
// (gets and peers wait for it, as for an SSD read).
inline constexpr std::uint8_t kChunkFilling = 1u << 4;

struct ChunkEntry {
  ChunkKey key;
  ChunkInfo info;
  std::uint32_t pins = 0;
};

struct IndexStats {
  std::size_t entries = 0;
  std::size_t capacity = 0;  // entries the index accepts
  std::size_t entries_per_tier[kKvTierCount] = {};
  std::uint64_t bytes_per_tier[kKvTierCount] = {};
  std::size_t doomed = 0;
  std::uint64_t pins_outstanding = 0;
  std::uint64_t lookups = 0;          // lookup_prefix calls
  std::uint64_t lookup_keys = 0;      // keys asked for
  std::uint64_t lookup_hits = 0;      // keys found (in the returned prefix)
  std::uint64_t inserts = 0;
  std::uint64_t updates = 0;
  std::uint64_t erases = 0;
  std::uint64_t rejected_full = 0;
  std::size_t max_probe = 0;          // longest probe sequence seen on insert
};

enum class EraseOutcome : std::uint8_t { kErased, kDeferred, kNotFound };

struct UnpinOutcome {
  std::uint32_t pins_left = 0;
  bool erased = false;  // the chunk was doomed and this was the last pin
  ChunkEntry entry;     // valid when erased: the slot to free
};

class ChunkIndex {
 public:
  // Accepts up to max_entries chunks; the table holds at most 7/8 load.
  explicit ChunkIndex(std::size_t max_entries);

  // Inserts a new chunk; kBadState if present (use update), kRejected when
  // full.
  KvStatus insert(const ChunkKey& key, const ChunkInfo& info);
  // Moves or re-describes a chunk; kNotFound if absent or doomed, kBusy if
  // pinned (readers hold its current location).
  KvStatus update(const ChunkKey& key, const ChunkInfo& info);
  // Erased now if unpinned, otherwise doomed (see above).
  EraseOutcome erase(const ChunkKey& key);

  // nullptr if absent or doomed. Valid until the next mutation.
  [[nodiscard]] const ChunkEntry* find(const ChunkKey& key) const;
  [[nodiscard]] bool is_pinned(const ChunkKey& key) const;

  // Length of the longest prefix of keys that is cached (committed, not
  // doomed); if out is given, the prefix's entries are appended to it.
  std::size_t lookup_prefix(std::span<const ChunkKey> keys, std::vector<ChunkEntry>* out = nullptr);
  // lookup_prefix that also pins every chunk of the prefix (a get's lease).
  std::size_t pin_prefix(std::span<const ChunkKey> keys, std::vector<ChunkEntry>* out = nullptr);

  // kNotFound if absent or doomed; else the pin count after.
  KvResult<std::uint32_t> pin(const ChunkKey& key);
  // kNotFound if absent, kBadState if not pinned.
  KvResult<UnpinOutcome> unpin(const ChunkKey& key);

  // Erases the namespace's unpinned chunks (returned, so their slots can be
  // freed) and dooms its pinned ones.
  std::vector<ChunkEntry> drop_namespace(std::uint32_t ns_id);

  void for_each(const std::function<void(const ChunkEntry&)>& fn) const;

  [[nodiscard]] std::size_t size() const { return stats_.entries; }
  [[nodiscard]] std::size_t max_entries() const { return max_entries_; }
  [[nodiscard]] const IndexStats& stats() const { return stats_; }
  // Fixed at construction: about 57 bytes per slot, slots = 2^k >= 8/7 max.
  [[nodiscard]] std::size_t memory_bytes() const { return ctrl_.size() + slots_.size() * sizeof(ChunkEntry); }

 private:
  static constexpr std::uint8_t kEmpty = 0;
  static constexpr std::size_t kNotFound = ~std::size_t{0};

  [[nodiscard]] std::size_t find_slot(const ChunkKey& key) const;
  // The walk lookup_prefix and pin_prefix share; pins each chunk when `pin`.
  std::size_t match_prefix(std::span<const ChunkKey> keys, std::vector<ChunkEntry>* out, bool pin);
  void erase_slot(std::size_t slot);
  void account(const ChunkEntry& e, int sign);

  std::size_t max_entries_;
  std::size_t mask_;
  std::vector<std::uint8_t> ctrl_;  // kEmpty, or 0x80 | 7 hash bits
  std::vector<ChunkEntry> slots_;
  IndexStats stats_;
};

}  // namespace cxlpool::kvcache
