// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/index.hpp"

#include <algorithm>
#include <bit>

namespace cxlpool::kvcache {

namespace {
std::uint8_t ctrl_of(std::uint64_t h) { return static_cast<std::uint8_t>(0x80u | (h >> 57)); }
}  // namespace

ChunkIndex::ChunkIndex(std::size_t max_entries) : max_entries_(max_entries) {
  // 7/8 maximum load keeps linear-probe sequences short.
  const std::size_t want = max_entries + max_entries / 7 + 1;
  const std::size_t cap = std::bit_ceil(std::max<std::size_t>(want, 8));
  mask_ = cap - 1;
  ctrl_.assign(cap, kEmpty);
  slots_.resize(cap);
  stats_.capacity = max_entries;
}

std::size_t ChunkIndex::find_slot(const ChunkKey& key) const {
  const std::uint64_t h = key_hash64(key);
  const std::uint8_t c = ctrl_of(h);
  for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
    if (ctrl_[i] == kEmpty) return kNotFound;
    if (ctrl_[i] == c && slots_[i].key == key) return i;
  }
}

void ChunkIndex::account(const ChunkEntry& e, int sign) {
  const auto t = static_cast<std::size_t>(e.info.tier);
  if (sign > 0) {
    ++stats_.entries_per_tier[t];
    stats_.bytes_per_tier[t] += e.info.length;
  } else {
    --stats_.entries_per_tier[t];
    stats_.bytes_per_tier[t] -= e.info.length;
  }
}

KvStatus ChunkIndex::insert(const ChunkKey& key, const ChunkInfo& info) {
  const std::uint64_t h = key_hash64(key);
  const std::uint8_t c = ctrl_of(h);
  std::size_t i = h & mask_;
  std::size_t probe = 0;
  for (; ctrl_[i] != kEmpty; i = (i + 1) & mask_, ++probe) {
    if (ctrl_[i] == c && slots_[i].key == key) return KvStatus::kBadState;
  }
  if (stats_.entries >= max_entries_) {
    ++stats_.rejected_full;
    return KvStatus::kRejected;
  }
  ctrl_[i] = c;
  slots_[i] = ChunkEntry{key, info, 0};
  slots_[i].info.flags &= static_cast<std::uint8_t>(~kChunkDoomed);
  account(slots_[i], +1);
  ++stats_.entries;
  ++stats_.inserts;
  stats_.max_probe = std::max(stats_.max_probe, probe);
  return KvStatus::kOk;
}

KvStatus ChunkIndex::update(const ChunkKey& key, const ChunkInfo& info) {
  const std::size_t i = find_slot(key);
  if (i == kNotFound || (slots_[i].info.flags & kChunkDoomed)) return KvStatus::kNotFound;
  if (slots_[i].pins != 0) return KvStatus::kBusy;
  account(slots_[i], -1);
  slots_[i].info = info;
  slots_[i].info.flags &= static_cast<std::uint8_t>(~kChunkDoomed);
  account(slots_[i], +1);
  ++stats_.updates;
  return KvStatus::kOk;
}

void ChunkIndex::erase_slot(std::size_t i) {
  account(slots_[i], -1);
  if (slots_[i].info.flags & kChunkDoomed) --stats_.doomed;
  --stats_.entries;
  ++stats_.erases;
  // Backward shift: pull later members of the probe run into the hole so
  // that no lookup stops early at it.
  std::size_t hole = i;
  for (std::size_t j = (i + 1) & mask_; ctrl_[j] != kEmpty; j = (j + 1) & mask_) {
    const std::size_t home = key_hash64(slots_[j].key) & mask_;
    if (((j - home) & mask_) >= ((j - hole) & mask_)) {
      ctrl_[hole] = ctrl_[j];
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  ctrl_[hole] = kEmpty;
}

EraseOutcome ChunkIndex::erase(const ChunkKey& key) {
  const std::size_t i = find_slot(key);
  if (i == kNotFound) return EraseOutcome::kNotFound;
  ChunkEntry& e = slots_[i];
  if (e.pins != 0) {
    if (!(e.info.flags & kChunkDoomed)) {
      e.info.flags |= kChunkDoomed;
      ++stats_.doomed;
    }
    return EraseOutcome::kDeferred;
  }
  erase_slot(i);
  return EraseOutcome::kErased;
}

const ChunkEntry* ChunkIndex::find(const ChunkKey& key) const {
  const std::size_t i = find_slot(key);
  if (i == kNotFound || (slots_[i].info.flags & kChunkDoomed)) return nullptr;
  return &slots_[i];
}

bool ChunkIndex::is_pinned(const ChunkKey& key) const {
  const std::size_t i = find_slot(key);
  return i != kNotFound && slots_[i].pins != 0;
}

std::size_t ChunkIndex::lookup_prefix(std::span<const ChunkKey> keys, std::vector<ChunkEntry>* out) {
  return match_prefix(keys, out, false);
}

std::size_t ChunkIndex::pin_prefix(std::span<const ChunkKey> keys, std::vector<ChunkEntry>* out) {
  return match_prefix(keys, out, true);
}

std::size_t ChunkIndex::match_prefix(std::span<const ChunkKey> keys, std::vector<ChunkEntry>* out, bool pin) {
  ++stats_.lookups;
  stats_.lookup_keys += keys.size();
  std::size_t n = 0;
  for (; n < keys.size(); ++n) {
    const std::size_t i = find_slot(keys[n]);
    if (i == kNotFound || (slots_[i].info.flags & (kChunkDoomed | kChunkWriting))) break;
    if (pin) {
      ++slots_[i].pins;
      ++stats_.pins_outstanding;
    }
    // Appended after pinning: a get's entries carry the pin they took.
    if (out) out->push_back(slots_[i]);
  }
  stats_.lookup_hits += n;
  return n;
}

KvResult<std::uint32_t> ChunkIndex::pin(const ChunkKey& key) {
  const std::size_t i = find_slot(key);
  if (i == kNotFound || (slots_[i].info.flags & kChunkDoomed)) return KvStatus::kNotFound;
  ++stats_.pins_outstanding;
  return ++slots_[i].pins;
}

KvResult<UnpinOutcome> ChunkIndex::unpin(const ChunkKey& key) {
  const std::size_t i = find_slot(key);
  if (i == kNotFound) return KvStatus::kNotFound;
  if (slots_[i].pins == 0) return KvStatus::kBadState;
  --stats_.pins_outstanding;
  UnpinOutcome r;
  r.pins_left = --slots_[i].pins;
  if (r.pins_left == 0 && (slots_[i].info.flags & kChunkDoomed)) {
    r.erased = true;
    r.entry = slots_[i];
    erase_slot(i);
  }
  return r;
}

std::vector<ChunkEntry> ChunkIndex::drop_namespace(std::uint32_t ns_id) {
  std::vector<ChunkEntry> dropped;
  // Backward shift may move an unvisited entry into the slot just freed, so
  // revisit the same slot after an erase. Entries shifted across the wrap
  // point land before the start and are caught by the second pass.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i <= mask_;) {
      ChunkEntry& e = slots_[i];
      if (ctrl_[i] == kEmpty || e.info.ns_id != ns_id) {
        ++i;
        continue;
      }
      if (e.pins != 0) {
        if (!(e.info.flags & kChunkDoomed)) {
          e.info.flags |= kChunkDoomed;
          ++stats_.doomed;
        }
        ++i;
        continue;
      }
      dropped.push_back(e);
      erase_slot(i);
    }
  }
  return dropped;
}

void ChunkIndex::for_each(const std::function<void(const ChunkEntry&)>& fn) const {
  for (std::size_t i = 0; i <= mask_; ++i) {
    if (ctrl_[i] != kEmpty) fn(slots_[i]);
  }
}

}  // namespace cxlpool::kvcache
