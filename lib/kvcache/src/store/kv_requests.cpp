// SPDX-License-Identifier: Apache-2.0
// The read side of the ring protocol: lookup, get, release, prefetch,
// delete. A get of DRAM/CXL chunks completes here without allocating beyond
// its completion's location list; one that needs SSD reads waits for them
// (kv_loads.cpp).
#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

KvStoreCompletion& KvStore::Impl::begin_completion(KvClientId client, const proto::KvRequest& r,
                                                   KvOutcome outcome) {
  KvStoreCompletion& c = ready.emplace_back();
  c.client = client;
  c.outcome = outcome;
  ++counters.outcomes[static_cast<std::size_t>(outcome.status)];
  if (!outcome.ok()) ++counters.rejected_requests;
  c.completion.request_id = r.request_id;
  // An op this version does not know is answered as op 0 (always an error),
  // so the ring never carries an op value it cannot vouch for.
  c.completion.op = r.op >= 1 && r.op <= proto::kKvOpMax ? r.op : 0;
  return c;
}

void KvStore::Impl::complete(KvClientId client, const proto::KvRequest& r, KvOutcome outcome, std::uint64_t r0,
                             std::uint64_t r1, std::uint64_t r2) {
  KvStoreCompletion& c = begin_completion(client, r, outcome);
  c.completion.result0 = r0;
  c.completion.result1 = r1;
  c.completion.result2 = r2;
}

// Per-tier hit rates in the usual cache-hierarchy sense: a key of the
// cached prefix hits its tier and misses every faster one; a key past the
// prefix misses every tier. Lookups and gets both count.
void KvStore::Impl::count_tier_hits(std::span<const ChunkEntry> prefix, std::size_t asked) {
  const bool present[kKvTierCount] = {true, arena(KvTier::kCxl).present(), ssd != nullptr};
  for (const ChunkEntry& e : prefix) {
    const std::size_t t = tier_index(e.info.tier);
    ++counters.tiers[t].hits;
    for (std::size_t u = 0; u < t; ++u) counters.tiers[u].misses += present[u] ? 1 : 0;
  }
  const std::size_t missed = asked - prefix.size();
  if (missed == 0) return;
  for (std::size_t t = 0; t < kKvTierCount; ++t) {
    if (present[t]) counters.tiers[t].misses += missed;
  }
}

void KvStore::Impl::location_of(const ChunkEntry& e, proto::KvLocation& out) const {
  const bool on_ssd = e.info.tier == KvTier::kSsd;
  out.offset = on_ssd ? 0 : e.info.offset;
  out.length = e.info.length;
  out.tier = static_cast<std::uint16_t>(e.info.tier);
  out.flags = 0;
  if (on_ssd || ((e.info.flags & kChunkSsdCopy) && has_ssd_copy(e.key))) out.flags = proto::kKvLocationSsdCopy;
}

// Keys are global, but a request sees only its own namespace's chunks: a
// client may send another namespace's keys (they are computable by anyone
// who knows its spec and tokens), and must find nothing under them. Cuts
// scratch_entries at the first chunk of another namespace.
std::size_t KvStore::Impl::own_prefix(std::size_t p, std::uint64_t ns_id) {
  for (std::size_t i = 0; i < p; ++i) {
    if (scratch_entries[i].info.ns_id != ns_id) {
      scratch_entries.resize(i);
      return i;
    }
  }
  return p;
}

void KvStore::Impl::do_lookup(KvClientId id, const proto::KvRequest& r) {
  const NamespaceState* n = ns(r.namespace_id);
  if (n == nullptr) return complete(id, r, KvStatus::kNotFound);
  scratch_entries.clear();
  const std::size_t p = own_prefix(index.lookup_prefix(scratch_keys, &scratch_entries), r.namespace_id);
  ++counters.lookups;
  counters.lookup_keys += scratch_keys.size();
  counters.lookup_hits += p;
  count_tier_hits(scratch_entries, scratch_keys.size());
  std::uint64_t cutoff = 0;
  if (r.flags & proto::kKvLookupCostCutoff) {
    LoadCostConfig cost;
    cost.tiers = config.tier_rates;
    cost.compute.tokens_per_s = static_cast<double>(r.param1);
    scratch_chunks.clear();
    for (const ChunkEntry& e : scratch_entries) scratch_chunks.push_back(CachedChunk{e.info.tier, e.info.length});
    LoadCostRequest req;
    req.prompt_tokens = r.param0;
    req.chunk_tokens = n->spec.chunk_tokens;
    req.chunks = scratch_chunks;
    auto decision = decide_load(cost, req);
    if (!decision) return complete(id, r, KvStatus::kInvalid);
    cutoff = decision->load_chunks;
  }
  KvStoreCompletion& c = begin_completion(id, r);
  c.completion.result0 = p;
  c.completion.result1 = cutoff;
  c.locations.resize(p);
  for (std::size_t i = 0; i < p; ++i) location_of(scratch_entries[i], c.locations[i]);
}

void KvStore::Impl::do_get(KvClientId id, const proto::KvRequest& r) {
  if (ns(r.namespace_id) == nullptr) return complete(id, r, KvStatus::kNotFound);
  ClientState& c = *client(id);
  ++counters.gets;
  scratch_entries.clear();
  const std::size_t p = own_prefix(index.lookup_prefix(scratch_keys, &scratch_entries), r.namespace_id);
  count_tier_hits(scratch_entries, scratch_keys.size());
  if (p == 0) return complete(id, r, KvStatus::kOk);
  std::uint64_t bytes = 0;
  bool any_ssd = false;
  for (std::size_t i = 0; i < p; ++i) {
    bytes += scratch_entries[i].info.length;
    any_ssd |= awaits_load(scratch_entries[i]);
  }
  if (const KvStatus admitted = admit_lease(id, c, bytes); admitted != KvStatus::kOk) {
    return complete(id, r, admitted);
  }
  // Pin what is resident first, so that nothing the rest of this get does
  // (promotions, slots for SSD reads) can evict part of the prefix.
  for (std::size_t i = 0; i < p; ++i) {
    if (!awaits_load(scratch_entries[i])) (void)index.pin(scratch_keys[i]);
  }
  if (config.promote_on_get && arena(KvTier::kCxl).present()) {
    for (std::size_t i = 0; i < p; ++i) {
      if (scratch_entries[i].info.tier == KvTier::kCxl) promote(scratch_keys[i]);
    }
  }
  if (!any_ssd) return finish_get(id, c, r.request_id, {scratch_keys.data(), p});

  const std::uint64_t pid = next_pending++;
  PendingGet& pg = pending_gets[pid];
  pg.client = id;
  pg.request_id = r.request_id;
  pg.held_bytes = bytes;
  pg.keys.assign(scratch_keys.begin(), scratch_keys.begin() + static_cast<std::ptrdiff_t>(p));
  pg.pinned.assign(p, 0);
  charge(c, bytes);
  ++c.leases;
  for (std::size_t i = 0; i < p; ++i) pg.pinned[i] = !awaits_load(scratch_entries[i]);
  for (std::size_t i = 0; i < p; ++i) {
    if (!awaits_load(scratch_entries[i])) continue;
    const ChunkKey& key = pg.keys[i];
    auto it = loads.find(key);
    if (it == loads.end()) {
      if (!start_load(key, static_cast<std::uint32_t>(r.namespace_id))) {
        // No slot for it: the lease covers the prefix before it.
        for (std::size_t j = i; j < p; ++j) {
          if (pg.pinned[j]) unpin_key(pg.keys[j]);
        }
        pg.keys.resize(i);
        pg.pinned.resize(i);
        break;
      }
      it = loads.find(key);
    }
    it->second.waiters.emplace_back(pid, static_cast<std::uint32_t>(i));
    if (it->second.fill != 0) hurry_fill(it->second);
    ++pg.loads_left;
  }
  if (pg.loads_left == 0) return finish_pending_get(pid);
  submit_loads();
}

// `keys` are all pinned and resident: the lease takes the pins.
void KvStore::Impl::finish_get(KvClientId id, ClientState& c, std::uint64_t request_id,
                               std::span<const ChunkKey> keys) {
  const std::uint64_t lease_id = open_lease(id, c, keys);
  proto::KvRequest r;
  r.request_id = request_id;
  r.op = static_cast<std::uint8_t>(proto::KvOp::kGet);
  KvStoreCompletion& done = begin_completion(id, r);
  done.completion.result0 = lease_id;
  done.completion.result1 = keys.size();
  done.locations.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const ChunkEntry* e = index.find(keys[i]);
    if (e == nullptr) continue;  // cannot happen: pinned chunks stay
    location_of(*e, done.locations[i]);
    if (e->info.tier != KvTier::kSsd) arena(e->info.tier).policy->touch(keys[i]);
    admission.record(keys[i]);
  }
}

void KvStore::Impl::do_release(KvClientId id, const proto::KvRequest& r) {
  complete(id, r, release_lease(id, r.param0));
}

void KvStore::Impl::do_prefetch(KvClientId id, const proto::KvRequest& r) {
  if (ns(r.namespace_id) == nullptr) return complete(id, r, KvStatus::kNotFound);
  scratch_entries.clear();
  const std::size_t p = own_prefix(index.lookup_prefix(scratch_keys, &scratch_entries), r.namespace_id);
  std::uint64_t queued = 0;
  for (std::size_t i = 0; i < p; ++i) {
    const ChunkKey& key = scratch_entries[i].key;
    if (scratch_entries[i].info.tier != KvTier::kSsd || loads.contains(key)) continue;
    if (!start_load(key, static_cast<std::uint32_t>(r.namespace_id))) break;
    ++queued;
  }
  counters.prefetches += queued;
  submit_loads();
  complete(id, r, KvStatus::kOk, queued);
}

void KvStore::Impl::do_delete(KvClientId id, const proto::KvRequest& r) {
  if (ns(r.namespace_id) == nullptr) return complete(id, r, KvStatus::kNotFound);
  std::uint64_t deleted = 0;
  for (const ChunkKey& key : scratch_keys) {
    const ChunkEntry* e = index.find(key);
    if (e == nullptr || e->info.ns_id != r.namespace_id) continue;
    if ((e->info.flags & kChunkFilling) && abandon_fill(key)) {
      ++deleted;  // its slot returns with its copy
    } else {
      const ChunkEntry was = *e;
      const EraseOutcome outcome = index.erase(key);
      if (outcome == EraseOutcome::kErased) forget_resident(was);
      if (outcome != EraseOutcome::kNotFound) ++deleted;
    }
    // A filling chunk is not on the log, but an older copy of its key may
    // be (one the index had no room for at recovery): tombstoned the same.
    if (has_ssd_copy(key)) {
      ssd_touched = true;
      (void)ssd->erase(key);  // a failed tombstone only means the chunk may come back after a restart
    }
  }
  counters.deletes += deleted;
  complete(id, r, KvStatus::kOk, deleted);
}

}  // namespace cxlpool::kvcache
