// SPDX-License-Identifier: Apache-2.0
// Chunks that move between the daemons of a pod. A holder pins an arena
// chunk while a peer reads it with a one-sided read (the pin keeps it from
// being evicted, moved or freed, so the read never sees another chunk's
// bytes); a reader reserves a DRAM slot for the chunk it fetches and indexes
// it only once the bytes arrived whole.
#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

std::size_t KvStore::cached_prefix(std::uint32_t ns_id, std::span<const proto::KvKey> keys) const {
  std::size_t p = 0;
  for (const proto::KvKey& k : keys) {
    const ChunkEntry* e = impl_->index.find(to_chunk_key(k));
    if (e == nullptr || e->info.ns_id != ns_id) break;
    ++p;
  }
  return p;
}

std::optional<std::uint32_t> KvStore::namespace_of(const NamespaceFingerprint& fp) const {
  const auto it = impl_->ns_by_fp.find(fp);
  if (it == impl_->ns_by_fp.end()) return std::nullopt;
  return it->second;
}

std::optional<std::uint32_t> KvStore::namespace_for_peer(const NamespaceFingerprint& fp) {
  return impl_->ns_for_fingerprint(fp, true);
}

std::optional<NamespaceFingerprint> KvStore::fingerprint_of(std::uint32_t ns_id) const {
  const NamespaceState* n = impl_->ns(ns_id);
  if (n == nullptr) return std::nullopt;
  return n->fp;
}

KvResult<KvPeerPin> KvStore::pin_for_peer(std::uint32_t ns_id, const proto::KvKey& k) {
  Impl& s = *impl_;
  const ChunkKey key = to_chunk_key(k);
  const ChunkEntry* e = s.index.find(key);
  // A chunk only on SSD would need a read first, one still being copied
  // into its slot the copy: a peer treats it as a miss.
  if (e == nullptr || e->info.ns_id != ns_id || s.awaits_load(*e)) return KvStatus::kNotFound;
  KvPeerPin pin;
  pin.tier = e->info.tier;
  pin.ns_id = ns_id;
  pin.offset = e->info.offset;
  pin.length = e->info.length;
  pin.crc = e->info.payload_crc;
  pin.crc_known = (e->info.flags & kChunkCrcKnown) != 0;
  if (!s.index.pin(key).ok()) return KvStatus::kNotFound;
  return pin;
}

void KvStore::unpin_for_peer(const proto::KvKey& key) { impl_->unpin_key(to_chunk_key(key)); }

KvResult<std::uint64_t> KvStore::reserve_fetch_slot(std::uint32_t ns_id) {
  Impl& s = *impl_;
  if (s.ns(ns_id) == nullptr) return KvStatus::kNotFound;
  auto offset = s.acquire_slot(KvTier::kDram);
  if (!offset) return KvStatus::kRejected;
  s.claim_slot(KvTier::kDram, *offset, ns_id);
  return *offset;
}

KvStatus KvStore::commit_fetch_slot(std::uint32_t ns_id, const proto::KvKey& k, std::uint64_t offset,
                                    std::uint32_t length, std::uint32_t crc) {
  Impl& s = *impl_;
  const ChunkKey key = to_chunk_key(k);
  if (s.index.find(key) != nullptr || length == 0 || length > s.config.slot_bytes) {
    s.arena(KvTier::kDram).slots.give(offset);
    return s.index.find(key) != nullptr ? KvStatus::kOk : KvStatus::kInvalid;
  }
  ChunkInfo info;
  info.tier = KvTier::kDram;
  info.ns_id = ns_id;
  info.offset = offset;
  info.length = length;
  info.payload_crc = crc;
  info.flags = kChunkCrcKnown;
  info.sequence = s.next_sequence++;
  const KvStatus inserted = s.index.insert(key, info);
  if (inserted != KvStatus::kOk) {
    s.arena(KvTier::kDram).slots.give(offset);
    return inserted;
  }
  s.arena(KvTier::kDram).policy->insert(key);
  s.admission.record(key);
  s.counters.tiers[tier_index(KvTier::kDram)].bytes_written += length;
  return KvStatus::kOk;
}

void KvStore::cancel_fetch_slot(std::uint64_t offset) { impl_->arena(KvTier::kDram).slots.give(offset); }

}  // namespace cxlpool::kvcache
