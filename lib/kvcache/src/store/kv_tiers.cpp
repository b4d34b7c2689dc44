// SPDX-License-Identifier: Apache-2.0
// Tier movement: arena slots, eviction with demotion DRAM -> CXL -> SSD,
// promotion CXL -> DRAM, and keeping the index in step with the SSD log.
//
// A demotion to the SSD log appends to its open region (under the per-region
// policy the region's write is asynchronous, and large chunks are written
// straight from their arena slot, which stays lent to the log until then);
// a commit under the per-commit policy waits for the device. Reads into
// arena slots are asynchronous (kv_loads.cpp).
#include <cstring>
#include <utility>

#include "cxlpool/common/stream_copy.hpp"
#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

std::optional<std::uint64_t> KvStore::Impl::acquire_slot(KvTier t) {
  ArenaTier& a = arena(t);
  if (!a.present()) return std::nullopt;
  for (;;) {
    if (auto offset = a.slots.take()) return offset;
    if (!evict_one(t)) return std::nullopt;
  }
}

// One victim leaves tier t. False when the policy has nothing unleased.
bool KvStore::Impl::evict_one(KvTier t) {
  auto victim = arena(t).policy->choose_victim(pinned);
  if (!victim) return false;
  const ChunkEntry* e = index.find(*victim);
  if (e == nullptr || e->info.tier != t) return true;  // not resident here: the policy forgot it, retry
  const ChunkEntry copy = *e;
  ++counters.tiers[tier_index(t)].evictions;
  demote(t, copy);
  return true;
}

// `e` is unpinned and no longer tracked by its tier's policy.
void KvStore::Impl::demote(KvTier from, const ChunkEntry& e) {
  if (from == KvTier::kDram && arena(KvTier::kCxl).present()) {
    if (auto offset = acquire_slot(KvTier::kCxl)) {
      ChunkInfo info = e.info;
      info.tier = KvTier::kCxl;
      info.offset = *offset;
      if (index.update(e.key, info) == KvStatus::kOk) {
        claim_slot(KvTier::kCxl, *offset, e.info.ns_id);
        stream_copy(slot_ptr(KvTier::kCxl, *offset, e.info.ns_id), slot_ptr(KvTier::kDram, e.info.offset, e.info.ns_id),
                    e.info.length);
        arena(KvTier::kCxl).policy->insert(e.key);
        arena(KvTier::kDram).slots.give(e.info.offset);
        KvTierCounters& cxl = counters.tiers[tier_index(KvTier::kCxl)];
        ++cxl.demotions;
        cxl.bytes_written += e.info.length;
        return;
      }
      arena(KvTier::kCxl).slots.give(*offset);
    }
  }
  demote_to_ssd(from, e);
}

// The last arena copy goes: kept on SSD when it already has a copy there or
// the admission filter lets it in, else dropped.
void KvStore::Impl::demote_to_ssd(KvTier from, const ChunkEntry& e) {
  bool kept = false;
  bool lent = false;
  if (ssd) {
    KvTierCounters& st = counters.tiers[tier_index(KvTier::kSsd)];
    if (has_ssd_copy(e.key)) {
      kept = true;
    } else if (admission.admit(e.key)) {
      const KvResult<bool> written = lend_to_ssd(from, e);
      kept = written.ok();
      lent = kept && written.value;
    } else {
      ++st.admissions_rejected;
    }
    if (kept) ++st.demotions;
  }
  if (kept) {
    ChunkInfo info = e.info;
    info.tier = KvTier::kSsd;
    info.offset = 0;
    info.flags |= kChunkSsdCopy;
    kept = index.update(e.key, info) == KvStatus::kOk;
  }
  if (!kept) index.erase(e.key);
  if (!lent) arena(from).slots.give(e.info.offset);
}

void KvStore::Impl::forget_resident(const ChunkEntry& e) {
  if (e.info.tier == KvTier::kSsd) return;
  ArenaTier& a = arena(e.info.tier);
  a.policy->remove(e.key);
  a.slots.give(e.info.offset);
}

void KvStore::Impl::promote(const ChunkKey& key) {
  const ChunkEntry* e = index.find(key);
  if (e == nullptr || e->info.tier != KvTier::kCxl || e->pins != 1) return;
  const ChunkEntry was = *e;
  ArenaTier& cxl = arena(KvTier::kCxl);
  // Out of the CXL policy and unpinned for the move: a cascade of evictions
  // that acquiring the DRAM slot starts can then never pick it.
  cxl.policy->remove(key);
  (void)index.unpin(key);
  bool moved = false;
  if (auto offset = acquire_slot(KvTier::kDram)) {
    ChunkInfo info = was.info;
    info.tier = KvTier::kDram;
    info.offset = *offset;
    if (index.update(key, info) == KvStatus::kOk) {
      claim_slot(KvTier::kDram, *offset, was.info.ns_id);
      stream_copy(slot_ptr(KvTier::kDram, *offset, was.info.ns_id),
                  slot_ptr(KvTier::kCxl, was.info.offset, was.info.ns_id), was.info.length);
      arena(KvTier::kDram).policy->insert(key);
      cxl.slots.give(was.info.offset);
      KvTierCounters& dram = counters.tiers[tier_index(KvTier::kDram)];
      ++dram.promotions;
      dram.bytes_written += was.info.length;
      moved = true;
    } else {
      arena(KvTier::kDram).slots.give(*offset);
    }
  }
  if (!moved) cxl.policy->insert(key);
  (void)index.pin(key);
}

KvOutcome KvStore::Impl::write_to_ssd(const ChunkEntry& e, std::span<const std::byte> bytes) {
  const NamespaceState* n = ns(e.info.ns_id);
  if (n == nullptr) return KvStatus::kBadState;  // cannot happen: chunks keep their namespace
  ssd_touched = true;
  return ssd->put(e.key, n->fp, bytes).outcome;
}

namespace {

// A lent slot's token: its arena offset and tier (offsets are slot-aligned,
// so the low bit is free); a put-window slot's carries kWindowLendToken.
std::uint64_t lend_token(KvTier t, std::uint64_t offset) { return offset | tier_index(t); }
bool lends_arena_slot(std::uint64_t token, KvTier t) {
  return (token & kWindowLendToken) == 0 && static_cast<KvTier>(token & 1) == t;
}

}  // namespace

KvResult<bool> KvStore::Impl::lend_to_ssd(KvTier from, const ChunkEntry& e) {
  const std::span<const std::byte> bytes{slot_ptr(from, e.info.offset, e.info.ns_id), e.info.length};
  const std::size_t t = tier_index(from);
  // Small chunks are copied: their copy is cheap, and a device write per
  // entry would cost more than it saves.
  const bool lendable = config.ssd_lend_min_bytes != 0 && e.info.length >= config.ssd_lend_min_bytes &&
                        (lent_slots[t] + 1) * 2 <= arena(from).slots.capacity() && (config.slot_bytes & 1) == 0;
  if (!lendable) {
    const KvOutcome written = write_to_ssd(e, bytes);
    if (!written.ok()) return written;
    return false;
  }
  const NamespaceState* n = ns(e.info.ns_id);
  if (n == nullptr) return KvStatus::kBadState;  // cannot happen: chunks keep their namespace
  SsdLentPayload payload;
  payload.bytes = bytes;
  payload.token = lend_token(from, e.info.offset);
  if ((e.info.flags & kChunkCrcKnown) != 0) payload.crc = e.info.payload_crc;
  payload.buffer_index = slot_buffer(from, e.info.offset, e.info.ns_id);
  ssd_touched = true;
  const KvResult<bool> lent = ssd->put_lent(e.key, n->fp, payload);
  if (lent.ok() && lent.value) ++lent_slots[t];
  return lent;
}

// The log is done with a lent slot (written, failed or given up): free.
void KvStore::Impl::return_lent_slot(std::uint64_t token) {
  if ((token & kWindowLendToken) != 0) return return_window_slot(token);
  const KvTier t = static_cast<KvTier>(token & 1);
  --lent_slots[tier_index(t)];
  arena(t).slots.give(token & ~std::uint64_t{1});
}

std::size_t KvStore::Impl::reclaim_open_dram_lends() {
  if (!ssd || lent_slots[tier_index(KvTier::kDram)] == 0) return 0;
  return ssd->reclaim_lent([](std::uint64_t token) { return lends_arena_slot(token, KvTier::kDram); });
}

std::size_t KvStore::Impl::reclaim_window_lends(KvClientId client) {
  if (!ssd) return 0;
  const std::size_t back = ssd->reclaim_lent([&](std::uint64_t token) { return lent_by(client, token); });
  counters.window_reclaims += back;
  return back;
}

// A put-window slot back from the log goes back to its client's window; a
// removed client's window is unmapped (its owner dropped) with its last.
void KvStore::Impl::return_window_slot(std::uint64_t token) {
  auto it = window_lends.find(token);
  if (it == window_lends.end()) return;  // cannot happen: every token is recorded
  const WindowLend lend = it->second;
  window_lends.erase(it);
  if (auto retired = retired_windows.find(lend.client); retired != retired_windows.end()) {
    if (--retired->second.lent == 0) {
      release_window_places(retired->second.places);
      retired_windows.erase(retired);
    }
    return;
  }
  ClientState* c = client(lend.client);
  if (c == nullptr) return;  // cannot happen: a client with lent slots retires its window
  --c->window_lent;
  c->window_slots.give(lend.window_offset);
}

// Keys the SSD log evicted leave the index when the log held their only
// copy. Arena chunks keep their kChunkSsdCopy flag: has_ssd_copy() asks the
// log itself before relying on it. Keys being read are settled when the read
// completes (the log finishes reads before it reuses their region).
void KvStore::Impl::reap_ssd_evictions() {
  std::vector<ChunkKey> keys;
  keys.swap(ssd_evicted);
  for (const ChunkKey& key : keys) {
    if (loads.contains(key)) continue;
    const ChunkEntry* e = index.find(key);
    if (e != nullptr && e->info.tier == KvTier::kSsd) index.erase(key);
  }
  keys.clear();
  if (ssd_evicted.empty()) ssd_evicted.swap(keys);  // keep the capacity
}

void KvStore::Impl::unpin_key(const ChunkKey& key) {
  const KvResult<UnpinOutcome> r = index.unpin(key);
  if (r.ok() && r.value.erased) forget_resident(r.value.entry);
}

}  // namespace cxlpool::kvcache
