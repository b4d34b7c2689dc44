// SPDX-License-Identifier: Apache-2.0
// Copies behind answered commits. A lone writer would otherwise wait for
// the commit's copy of its chunk from the put window into DRAM; instead the
// commit takes the chunk's CRC-32C (in pieces on the commit workers, a
// fraction of a copy's time), indexes it as filling and answers, and the
// workers copy it behind the answer while the writer fills its next slot.
// The window slot stays taken until the copy is in. The writer could still
// change it meanwhile: the copy checks what it wrote (the CRC of the
// destination, taken as it copies) against the commit's CRC, and a chunk
// that does not match leaves the index, so no reader ever sees bytes other
// than those committed. Gets and peers that find a filling chunk wait for
// the copy as they wait for an SSD read (its Load in `loads`).
#include <cassert>

#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

bool KvStore::Impl::copies_behind(const ClientState& c, std::uint64_t bytes, std::size_t chunks) const {
  if (!copier || config.copy_behind_min_bytes == 0 || bytes < config.copy_behind_min_bytes) return false;
  if (c.window_owner == nullptr) return false;  // the window could go before the copy is in
  if (ssd && ssd->config().sync == SsdSyncPolicy::kPerCommit) return false;
  // Behind other commits, the workers are busy: a copy behind the answer
  // adds a CRC pass to the copy, which only pays when the writer would
  // otherwise wait for an idle store's copy.
  if (!commits.empty()) return false;
  // Nor for a writer with other puts under way (reservations open besides
  // this one): it is not waiting for this commit alone, and copies behind
  // the answer would only pile up behind its next puts.
  if (c.reservations.size() > 1) return false;
  // Slots held by copies behind the answer come back by themselves, but a
  // writer that finds its window full waits for them (settle_copies): at
  // most half of the window is held that way.
  return (c.window_fills + chunks) * 2 <= c.window_slots.capacity();
}

KvOutcome KvStore::Impl::start_fill(KvClientId id, ClientState& c, const Reservation& res, ReservedChunk& rc,
                                    std::uint64_t offset, std::uint32_t crc) {
  claim_slot(KvTier::kDram, offset, res.ns_id);
  // A read of an older chunk of this key, deleted since, has not finished:
  // its Load is in the way, so this one is copied before the answer.
  if (loads.contains(rc.key)) return copy_into_slot(c, res, rc, offset, false);
  ChunkInfo info;
  info.tier = KvTier::kDram;
  info.flags = kChunkCrcKnown | kChunkFilling;
  info.ns_id = res.ns_id;
  info.offset = offset;
  info.length = res.chunk_bytes;
  info.payload_crc = crc;
  info.sequence = next_sequence++;
  if (index.insert(rc.key, info) != KvStatus::kOk) {
    arena(KvTier::kDram).slots.give(offset);
    return KvStatus::kRejected;
  }
  // The copy's pin: nothing frees the slot under the copy (a delete or a
  // namespace drop abandons the fill, whose slot returns with the copy).
  (void)index.pin(rc.key);
  admission.record(rc.key);
  Load& load = loads[rc.key];
  load.tier = KvTier::kDram;
  load.offset = offset;
  load.ns_id = res.ns_id;
  load.submitted = true;  // never queued for the log
  load.waiters.clear();

  const std::uint64_t fill_id = next_fill++;
  load.fill = fill_id;
  Fill& f = fills[fill_id];
  f.client = id;
  f.window_offset = rc.window_offset;
  f.window_owner = c.window_owner;
  f.key = rc.key;
  f.offset = offset;
  f.bytes = res.chunk_bytes;
  f.crc = crc;
  f.declared = rc.declared;
  f.piece_bytes = copy_piece_bytes(res.chunk_bytes, copier->threads());
  CopyJob job;
  job.owner = kFillOwner;
  job.commit = kFillJob | fill_id;
  job.with_crc = true;
  scratch_fill_jobs.clear();
  f.pieces_left = queue_pieces(scratch_fill_jobs, job, c.window.data() + rc.window_offset,
                               slot_ptr(KvTier::kDram, offset, res.ns_id), res.chunk_bytes, f.piece_bytes);
  copier->submit(scratch_fill_jobs, true);
  copies_out += scratch_fill_jobs.size();
  fill_copies_out += scratch_fill_jobs.size();
  counters.commit_copies_offloaded += scratch_fill_jobs.size();
  rc.filling = true;
  ++c.window_fills;
  ++counters.puts_copied_behind;
  return KvStatus::kOk;
}

void KvStore::Impl::fill_piece_done(const CopyJob& job) {
  --fill_copies_out;
  auto it = fills.find(job.commit & ~kFillJob);
  if (it == fills.end()) return;  // cannot happen: fills are never cancelled
  Fill& f = it->second;
  f.piece_crcs[job.piece] = job.crc;
  if (--f.pieces_left != 0) return;
  finish_fill(f);
  fills.erase(it);
}

void KvStore::Impl::finish_fill(Fill& f) {
  if (ClientState* c = client(f.client)) {
    c->window_slots.give(f.window_offset);
    --c->window_fills;
  }
  if (f.abandoned) {
    arena(KvTier::kDram).slots.give(f.offset);
    return;
  }
  const std::uint32_t copied = combine_piece_crcs(f.piece_crcs, f.bytes, f.piece_bytes);
  // The Load and the index entry are the fill's own until it ends: only
  // abandon_fill takes them earlier (a delete, a namespace drop).
  Load load;
  if (auto lit = loads.find(f.key); lit != loads.end()) {
    load = std::move(lit->second);
    loads.erase(lit);
  }
  // The copy's pin goes first. Nobody else pins a filling chunk (gets and
  // peers wait in its Load), so the entry can then be updated or erased.
  (void)index.unpin(f.key);
  if (const ChunkEntry* e = index.find(f.key)) {
    const ChunkEntry was = *e;
    ChunkInfo info = was.info;
    info.flags &= static_cast<std::uint8_t>(~kChunkFilling);
    if (copied == f.crc && index.update(f.key, info) == KvStatus::kOk) {
      arena(KvTier::kDram).policy->insert(f.key);
      counters.tiers[tier_index(KvTier::kDram)].bytes_written += f.bytes;
    } else {
      // Its writer changed the window slot after the commit, or declared a
      // CRC other than its bytes': never served.
      assert(copied != f.crc && "a filling chunk was pinned by someone else");
      ++(f.declared ? counters.put_checksum_mismatch : counters.put_window_changed);
      if (index.erase(f.key) == EraseOutcome::kErased) forget_resident(was);
    }
  }
  // Waiters find the chunk readable and pin it, or gone: their prefix ends
  // before it, as for a chunk deleted while it was read.
  wake_load_waiters(load, f.key, KvOutcome());
}

bool KvStore::Impl::abandon_fill(const ChunkKey& key) {
  auto lit = loads.find(key);
  if (lit == loads.end() || lit->second.fill == 0) return false;
  auto fit = fills.find(lit->second.fill);
  if (fit == fills.end()) return false;  // cannot happen: a fill's Load goes with it
  fit->second.abandoned = true;
  const Load load = std::move(lit->second);
  loads.erase(lit);
  // The copy's pin goes, then the entry: its slot is not given back here
  // (forget_resident) but by finish_fill, once no worker writes into it.
  (void)index.unpin(key);
  (void)index.erase(key);
  wake_load_waiters(load, key, KvOutcome());
  return true;
}

void KvStore::Impl::hurry_fill(const Load& load) { copier->promote(kFillJob | load.fill); }

void KvStore::Impl::settle_copies() {
  // A commit whose CRC comes back starts its copy behind the answer: one
  // more round, never more (a fill starts no other copy).
  do {
    while (copier->run_one(true)) {
    }
    copier->wait_idle();
    reap_commits();
  } while (copies_out != 0);
}

}  // namespace cxlpool::kvcache
