// SPDX-License-Identifier: Apache-2.0
// SSD reads into arena slots: one O_DIRECT read per chunk straight into a
// free DRAM (else CXL) slot, shared by every get waiting for that chunk and
// by prefetches. A read that fails takes the chunk out of the index (the log
// dropped it too) and fails the gets waiting for it; one that finds the chunk
// gone (deleted, or evicted from the log before the read was issued) only
// shortens their prefix.
#include <algorithm>

#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

bool KvStore::Impl::start_load(const ChunkKey& key, std::uint32_t ns_id) {
  KvTier tier = KvTier::kDram;
  auto offset = acquire_slot(KvTier::kDram);
  if (!offset) {
    tier = KvTier::kCxl;
    offset = acquire_slot(KvTier::kCxl);
  }
  if (!offset) return false;
  claim_slot(tier, *offset, ns_id);
  Load& load = loads[key];
  load.tier = tier;
  load.offset = *offset;
  load.ns_id = ns_id;
  load.submitted = false;
  load.waiters.clear();
  unsubmitted.push_back(key);
  return true;
}

// Hands queued loads to the log, as many as its device queue takes; the rest
// wait for the next poll.
void KvStore::Impl::submit_loads() {
  if (unsubmitted.empty() || !ssd) return;
  scratch_gets.clear();
  for (const ChunkKey& key : unsubmitted) {
    const Load& load = loads[key];
    const std::int32_t fixed = slot_buffer(load.tier, load.offset, load.ns_id);
    scratch_gets.push_back(SsdGetRequest{key, {slot_ptr(load.tier, load.offset, load.ns_id), config.slot_bytes}, 0, fixed});
  }
  ssd_touched = true;
  const std::size_t accepted = ssd->submit_gets(scratch_gets);
  for (std::size_t i = 0; i < accepted; ++i) {
    loads[unsubmitted.front()].submitted = true;
    unsubmitted.pop_front();
  }
}

// Also settles the log's region writes that completed (poll_gets reaps
// every completion of the device).
void KvStore::Impl::reap_loads() {
  if (!ssd) return;
  if (scratch_done.size() < 64) scratch_done.resize(64);
  for (;;) {
    auto got = ssd->poll_gets(scratch_done, 0, std::chrono::nanoseconds(0));
    if (!got) break;
    for (std::size_t i = 0; i < *got; ++i) finish_load(scratch_done[i]);
    if (*got < scratch_done.size()) break;
  }
}

void KvStore::Impl::finish_load(const SsdGetCompletion& done) {
  auto it = loads.find(done.key);
  if (it == loads.end()) return;
  const Load load = std::move(it->second);
  loads.erase(it);
  const ChunkEntry* e = index.find(done.key);
  const bool was_on_ssd = e != nullptr && e->info.tier == KvTier::kSsd;
  bool placed = false;
  if (done.outcome.ok() && was_on_ssd) {
    ChunkInfo info = e->info;
    info.tier = load.tier;
    info.offset = load.offset;
    info.length = done.payload_bytes;
    info.flags |= kChunkSsdCopy;
    if (index.update(done.key, info) == KvStatus::kOk) {
      arena(load.tier).policy->insert(done.key);
      ++counters.tiers[tier_index(load.tier)].promotions;
      placed = true;
    }
  } else if (!done.outcome.ok() && was_on_ssd) {
    index.erase(done.key);  // not poisoned: no lookup finds a chunk that cannot be read
  }
  if (!placed) arena(load.tier).slots.give(load.offset);
  // A chunk gone meanwhile only ends the prefix there; a read that failed
  // fails the gets waiting for it.
  const bool failed = !done.outcome.ok() && done.outcome.status != KvStatus::kNotFound;
  wake_load_waiters(load, done.key, failed ? done.outcome : KvOutcome());
}

void KvStore::Impl::wake_load_waiters(const Load& load, const ChunkKey& key, const KvOutcome& failed) {
  for (const auto& [pid, i] : load.waiters) {
    auto pit = pending_gets.find(pid);
    if (pit == pending_gets.end()) continue;  // its client went away
    PendingGet& pg = pit->second;
    if (!failed.ok() && !pg.for_peer) {
      if (pg.failed.ok()) pg.failed = failed;
    } else if (failed.ok() && i < pg.keys.size()) {
      // A peer's prefix ends at a read that failed (its chunk is not
      // pinned), never serving bytes that did not check.
      const ChunkEntry* now = index.find(key);
      if (now != nullptr && !awaits_load(*now) && index.pin(key).ok()) {
        // A chunk copied behind its commit was not read from the SSD.
        pg.pinned[i] = pg.for_peer && load.fill == 0 ? kPinnedLoaded : kPinnedResident;
      }
    }
    if (--pg.loads_left == 0) finish_pending_get(pid);
  }
}

void KvStore::Impl::finish_pending_get(std::uint64_t id) {
  auto it = pending_gets.find(id);
  if (it == pending_gets.end()) return;
  PendingGet pg = std::move(it->second);
  pending_gets.erase(it);
  if (pg.for_peer) return finish_peer_load(id, pg);
  const std::size_t n = pg.keys.size();
  std::size_t p = 0;
  if (pg.failed.ok()) {
    while (p < n && pg.pinned[p]) ++p;
  }
  for (std::size_t j = p; j < n; ++j) {
    if (pg.pinned[j]) unpin_key(pg.keys[j]);
  }
  ClientState* c = client(pg.client);
  if (c == nullptr) {
    for (std::size_t j = 0; j < p; ++j) unpin_key(pg.keys[j]);
    return;
  }
  uncharge(*c, pg.held_bytes);
  --c->leases;
  proto::KvRequest r;
  r.request_id = pg.request_id;
  r.op = static_cast<std::uint8_t>(proto::KvOp::kGet);
  if (!pg.failed.ok()) return complete(pg.client, r, pg.failed);
  if (p == 0) return complete(pg.client, r, KvStatus::kOk);
  finish_get(pg.client, *c, pg.request_id, {pg.keys.data(), p});
}

void KvStore::Impl::cancel_pending_gets(KvClientId client) {
  for (auto it = pending_gets.begin(); it != pending_gets.end();) {
    if (it->second.client != client || it->second.for_peer) {
      ++it;
      continue;
    }
    for (std::size_t j = 0; j < it->second.keys.size(); ++j) {
      if (it->second.pinned[j]) unpin_key(it->second.keys[j]);
    }
    it = pending_gets.erase(it);
  }
}

}  // namespace cxlpool::kvcache
