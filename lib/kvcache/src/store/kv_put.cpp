// SPDX-License-Identifier: Apache-2.0
// Two-phase put: put_begin reserves put-window slots, the client writes its
// chunks there, put_commit copies the kept ones into DRAM slots. The copy is
// what isolates clients: a committed chunk lives where no client can write.
// With commit workers the copies run on their threads (commit_copier.hpp),
// a large chunk's as pieces on several at once, and the commit finishes in
// a later poll(); without, on this thread at once.
// Under the per-commit SSD policy a commit also writes each chunk through to
// the log before it is acknowledged (the durability contract outranks the
// admission filter), so an acknowledged commit survives a crash.
// A commit with kKvPutCommitToSsd puts its chunks on the SSD log only: the
// log writes a large chunk straight from its window slot, which stays taken
// until the region's write is done, so that such a put costs the writer's
// own write, a CRC pass and the device write, with no copy.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <span>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/stream_copy.hpp"
#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

namespace {

bool key_less(const ChunkKey& a, const ChunkKey& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; }

// What a commit that stores no chunk answers: the first chunk's failure,
// but any other before a declared checksum's mismatch, which a writer
// (cxlpool_kv_put) takes as chunks simply not stored.
void note_failure(KvOutcome& first, KvOutcome failure) {
  if (first.ok() || (first.status == KvStatus::kChecksumError && failure.status != KvStatus::kChecksumError)) {
    first = failure;
  }
}

}  // namespace

void KvStore::Impl::do_put_begin(KvClientId id, const proto::KvRequest& r) {
  if (ns(r.namespace_id) == nullptr) return complete(id, r, KvStatus::kNotFound);
  ClientState& c = *client(id);
  if (r.param0 == 0) return complete(id, r, KvStatus::kInvalid);
  if (r.param0 > config.slot_bytes) return complete(id, r, KvStatus::kTooLarge);
  if (c.window_slots.capacity() == 0) return complete(id, r, KvStatus::kNotPermitted);  // no put window
  if (c.reservations.size() >= config.max_leases_per_client) return complete(id, r, KvStatus::kRetry);
  scratch_sorted.assign(scratch_keys.begin(), scratch_keys.end());
  std::sort(scratch_sorted.begin(), scratch_sorted.end(), key_less);
  if (std::adjacent_find(scratch_sorted.begin(), scratch_sorted.end()) != scratch_sorted.end()) {
    return complete(id, r, KvStatus::kInvalid);  // a key twice
  }
  const std::size_t n = scratch_keys.size();
  scratch_marks.assign(n, 0);
  std::size_t fresh = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Only this namespace's chunks count: a key stored under another one
    // (a client can send any key) must not tell the writer it exists.
    const ChunkEntry* e = index.find(scratch_keys[i]);
    const bool cached = e != nullptr && e->info.ns_id == r.namespace_id;
    scratch_marks[i] = cached;
    fresh += cached ? 0 : 1;
  }
  const std::uint64_t bytes = fresh * r.param0;
  if (over_quota(c, bytes)) return complete(id, r, KvStatus::kOverQuota);
  if (fresh > c.window_slots.free_count()) reclaim_window(id, c);
  // Slots that copies behind answered commits still read come back as soon
  // as those copies are in: finish them now rather than refuse.
  if (fresh > c.window_slots.free_count() && c.window_fills != 0) settle_copies();
  if (fresh > c.window_slots.free_count()) return complete(id, r, KvStatus::kRetry);

  const std::uint64_t rid = next_reservation++;
  Reservation& res = c.reservations[rid];
  res.ns_id = static_cast<std::uint32_t>(r.namespace_id);
  res.chunk_bytes = static_cast<std::uint32_t>(r.param0);
  res.held_bytes = bytes;
  res.chunks.resize(n);
  charge(c, bytes);
  ++reservations_live;
  KvStoreCompletion& done = begin_completion(id, r);
  done.completion.result0 = rid;
  done.locations.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    ReservedChunk& rc = res.chunks[i];
    proto::KvLocation& loc = done.locations[i];
    rc.key = scratch_keys[i];
    rc.cached = scratch_marks[i] != 0;
    loc.tier = proto::kKvLocationPutWindow;
    if (rc.cached) {
      loc.flags = proto::kKvLocationCached;
      admission.record(rc.key);  // someone computed it again: a sighting
      continue;
    }
    rc.window_offset = *c.window_slots.take();
    loc.offset = rc.window_offset;
    loc.length = res.chunk_bytes;
  }
}

// Slots the log writes from come back once their region is written. Those
// of regions on their way to the device come back by themselves; when all
// of them wait for the open region, which may not fill for a long time, the
// log copies them into its buffer and lets them go: a copy for a window too
// small for its writer, never a region cut short.
void KvStore::Impl::reclaim_window(KvClientId id, const ClientState& c) {
  if (c.window_lent == 0 || !ssd) return;
  if (ssd->open_lent([&](std::uint64_t token) { return lent_by(id, token); }) == c.window_lent) {
    reclaim_window_lends(id);
  }
}

void KvStore::Impl::do_put_commit(KvClientId id, const proto::KvRequest& r) {
  ClientState& c = *client(id);
  auto it = c.reservations.find(r.param0);
  if (it == c.reservations.end()) return complete(id, r, KvStatus::kNotFound);
  Reservation& res = it->second;
  // Match the kept keys to the reservation (usually in the same order)
  // before changing anything: a bad list leaves the reservation as it was.
  const std::size_t n = res.chunks.size();
  scratch_marks.assign(n, 0);
  scratch_index.resize(scratch_keys.size());
  for (std::size_t j = 0; j < scratch_keys.size(); ++j) {
    std::size_t at = j;
    if (at >= n || !(res.chunks[at].key == scratch_keys[j])) {
      at = n;
      for (std::size_t k = 0; k < n; ++k) {
        if (res.chunks[k].key == scratch_keys[j]) {
          at = k;
          break;
        }
      }
    }
    if (at == n || scratch_marks[at]) return complete(id, r, KvStatus::kInvalid);
    scratch_marks[at] = 1;
    scratch_index[j] = static_cast<std::uint32_t>(at);
  }

  // Declared checksums ride with their chunks from here on.
  for (std::size_t j = 0; j < scratch_checksums.size(); ++j) {
    ReservedChunk& rc = res.chunks[scratch_index[j]];
    rc.declared = true;
    rc.declared_crc = scratch_checksums[j];
  }
  const bool to_ssd = (r.flags & proto::kKvPutCommitToSsd) != 0 && ssd != nullptr;
  // Commits waiting for DRAM slots take the ones freed since before a new
  // commit does, so that a stream of new ones cannot starve them.
  if (commits_waiting != 0) retry_waiting_commits();
  if (copier) {
    start_commit(id, c, r, res, to_ssd);
    c.reservations.erase(it);
    return;
  }
  const bool write_through = ssd && ssd->config().sync == SsdSyncPolicy::kPerCommit;
  std::uint64_t committed = 0;
  std::uint64_t on_ssd = 0;
  KvOutcome first_failure;  // of the chunks not committed, the first's outcome
  for (std::size_t j = 0; j < scratch_keys.size(); ++j) {
    ReservedChunk& rc = res.chunks[scratch_index[j]];
    const KvOutcome done =
        to_ssd ? commit_to_ssd(id, c, res, rc, std::nullopt, on_ssd) : commit_inline(c, res, rc, write_through);
    if (done.ok()) {
      ++committed;
    } else {
      note_failure(first_failure, done);
    }
  }
  end_commit(id, c, r, res, scratch_keys.size(), committed, first_failure, on_ssd);
  c.reservations.erase(it);
}

KvOutcome KvStore::Impl::commit_inline(const ClientState& c, const Reservation& res, const ReservedChunk& rc,
                                       bool write_through) {
  // Stored already, maybe by another client meanwhile; under another
  // namespace it cannot be stored again (one entry per key) and counts the
  // same, so the answer does not reveal it.
  if (index.find(rc.key) != nullptr) {
    admission.record(rc.key);
    return KvStatus::kOk;
  }
  if (rc.cached) return KvStatus::kNotFound;  // the client wrote nothing and the stored copy is gone
  auto offset = acquire_slot(KvTier::kDram);
  if (!offset) return KvStatus::kRejected;  // every DRAM chunk is leased or being read
  return copy_into_slot(c, res, rc, *offset, write_through);
}

KvOutcome KvStore::Impl::copy_into_slot(const ClientState& c, const Reservation& res, const ReservedChunk& rc,
                                        std::uint64_t offset, bool write_through) {
  // The daemon never reads the slot again: stream it past the caches. A
  // chunk that a demotion would write to the SSD log from its slot gets
  // its CRC in the same pass, so that the demotion need not read it again
  // (the slot is the daemon's alone: the bytes cannot change); without
  // such a log the CRC would be work for nothing.
  claim_slot(KvTier::kDram, offset, res.ns_id);
  std::byte* slot = slot_ptr(KvTier::kDram, offset, res.ns_id);
  const std::byte* from = c.window.data() + rc.window_offset;
  if (lends_to_ssd(res.chunk_bytes)) {
    // The CRC of what the slot now holds (the writer could change its
    // window between a checksum of the source and the copy), which a
    // declared one is checked against.
    const std::uint32_t crc = copy_crc32c_of_copy(slot, from, res.chunk_bytes);
    if (rc.declared && crc != rc.declared_crc) return refuse_mismatch(offset);
    return index_copied(res, rc, offset, &crc, write_through);
  }
  stream_copy(slot, from, res.chunk_bytes);
  return index_copied(res, rc, offset, nullptr, write_through);
}

KvOutcome KvStore::Impl::refuse_mismatch(std::uint64_t offset) {
  arena(KvTier::kDram).slots.give(offset);
  ++counters.put_checksum_mismatch;
  return KvStatus::kChecksumError;
}

KvOutcome KvStore::Impl::index_copied(const Reservation& res, const ReservedChunk& rc, std::uint64_t offset,
                                      const std::uint32_t* crc, bool write_through) {
  ChunkInfo info;
  if (crc != nullptr) {
    info.payload_crc = *crc;
    info.flags |= kChunkCrcKnown;
  }
  info.tier = KvTier::kDram;
  info.ns_id = res.ns_id;
  info.offset = offset;
  info.length = res.chunk_bytes;
  info.sequence = next_sequence++;
  if (write_through) {
    const ChunkEntry entry{rc.key, info, 0};
    const KvOutcome written = write_to_ssd(entry, {slot_ptr(KvTier::kDram, offset, res.ns_id), res.chunk_bytes});
    if (!written.ok()) {
      arena(KvTier::kDram).slots.give(offset);
      return written;
    }
    info.flags |= kChunkSsdCopy;
  }
  if (index.insert(rc.key, info) != KvStatus::kOk) {
    arena(KvTier::kDram).slots.give(offset);
    return KvStatus::kRejected;
  }
  arena(KvTier::kDram).policy->insert(rc.key);
  admission.record(rc.key);
  counters.tiers[tier_index(KvTier::kDram)].bytes_written += res.chunk_bytes;
  return KvStatus::kOk;
}

KvOutcome KvStore::Impl::commit_to_ssd(KvClientId id, ClientState& c, const Reservation& res, ReservedChunk& rc,
                                       std::optional<std::uint32_t> crc, std::uint64_t& on_ssd) {
  if (index.find(rc.key) != nullptr) {  // as commit_inline
    admission.record(rc.key);
    return KvStatus::kOk;
  }
  if (rc.cached) return KvStatus::kNotFound;
  const NamespaceState* n = ns(res.ns_id);
  if (n == nullptr) return KvStatus::kBadState;  // cannot happen: ids stay valid
  const std::span<const std::byte> bytes{c.window.data() + rc.window_offset, res.chunk_bytes};
  if (rc.declared) {
    // The log reads the window itself: checked against the bytes there now
    // (a lent slot's later copies are checked against this CRC too).
    if (!crc) crc = crc32c(bytes);
    if (*crc != rc.declared_crc) {
      ++counters.put_checksum_mismatch;
      return KvStatus::kChecksumError;
    }
  }
  ssd_touched = true;
  if (lends_window(c, res.chunk_bytes)) {
    // The writer may still change the slot: the CRC taken now is what the
    // log checks every later copy and read against.
    SsdLentPayload payload;
    payload.bytes = bytes;
    payload.crc = crc ? *crc : crc32c(bytes);
    payload.check_copies = true;
    payload.buffer_index = window_buffer(c, rc.window_offset);
    payload.token = next_window_lend++;
    const KvResult<bool> put = ssd->put_lent(rc.key, n->fp, payload);
    if (!put.ok()) return put.outcome;
    if (put.value) {
      window_lends.emplace(payload.token, WindowLend{id, rc.window_offset});
      ++c.window_lent;
      rc.lent = true;
    }
  } else if (const KvResult<std::uint64_t> put = ssd->put(rc.key, n->fp, bytes); !put.ok()) {
    return put.outcome;
  }
  ChunkInfo info;
  info.tier = KvTier::kSsd;
  info.flags = kChunkSsdCopy;
  info.ns_id = res.ns_id;
  info.length = res.chunk_bytes;
  info.sequence = next_sequence++;
  if (index.insert(rc.key, info) != KvStatus::kOk) {
    (void)ssd->erase(rc.key);  // never served: the index has no room
    return KvStatus::kRejected;
  }
  admission.record(rc.key);
  ++counters.puts_to_ssd;
  if (rc.lent) ++counters.window_lends;
  ++on_ssd;
  return KvStatus::kOk;
}

void KvStore::Impl::end_commit(KvClientId id, ClientState& c, const proto::KvRequest& r, const Reservation& res,
                               std::size_t kept, std::uint64_t committed, KvOutcome first_failure,
                               std::uint64_t on_ssd) {
  counters.puts += committed;
  counters.put_aborts += res.chunks.size() - kept;
  for (const ReservedChunk& rc : res.chunks) {
    if (!rc.cached && !rc.lent && !rc.filling) c.window_slots.give(rc.window_offset);
  }
  uncharge(c, res.held_bytes);
  --reservations_live;
  complete(id, r, committed == 0 ? first_failure : KvOutcome(), committed, on_ssd);
}

// Cuts a chunk's copy (to == null: its CRC only) into pieces of piece_bytes,
// appended to `out` as copies of `job`; how many.
std::uint16_t KvStore::Impl::queue_pieces(std::vector<CopyJob>& out, CopyJob job, const std::byte* from, std::byte* to,
                                          std::uint64_t bytes, std::uint32_t piece_bytes) {
  for (std::uint64_t at = 0; at < bytes; at += piece_bytes) {
    job.from = from + at;
    job.to = to == nullptr ? nullptr : to + at;
    job.bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(piece_bytes, bytes - at));
    out.push_back(job);
    ++job.piece;
  }
  assert(job.piece <= kMaxCopyPieces);
  return job.piece;
}

// The checks and slot choices of commit_inline, in the same order, with the
// copies handed to the workers; what follows a copy (index, write-through)
// waits for finish_commit on this thread.
void KvStore::Impl::start_commit(KvClientId id, ClientState& c, const proto::KvRequest& r, Reservation& res,
                                 bool to_ssd) {
  const std::uint64_t commit_id = next_commit++;
  PendingCommit pc;
  pc.client = id;
  pc.request = r;
  pc.crc = lends_to_ssd(res.chunk_bytes);
  pc.piece_bytes = copy_piece_bytes(res.chunk_bytes, copier->threads());
  pc.chunks.resize(scratch_keys.size());
  scratch_jobs.clear();
  const bool behind = !to_ssd && copies_behind(c, res.chunk_bytes, scratch_keys.size());
  for (std::size_t j = 0; j < scratch_keys.size(); ++j) {
    CommitChunk& cc = pc.chunks[j];
    cc.reserved = scratch_index[j];
    const ReservedChunk& rc = res.chunks[cc.reserved];
    if (index.find(rc.key) != nullptr) {
      admission.record(rc.key);
      cc.state = CommitChunk::State::kStored;
      continue;
    }
    if (rc.cached) {
      cc.state = CommitChunk::State::kSettled;
      cc.outcome = KvStatus::kNotFound;
      continue;
    }
    CopyJob job;
    job.owner = id;
    job.commit = commit_id;
    job.chunk = static_cast<std::uint32_t>(j);
    if (to_ssd) {
      cc.to_ssd = true;
      if (!lends_window(c, res.chunk_bytes)) {  // copied into the log's buffer, now
        cc.state = CommitChunk::State::kSettled;
        cc.outcome = commit_to_ssd(id, c, res, res.chunks[cc.reserved], std::nullopt, pc.on_ssd);
        continue;
      }
      // Only its CRC is taken, in pieces on the workers: the log writes
      // the chunk from the window once they are back.
      cc.state = CommitChunk::State::kCopying;
      job.with_crc = true;
      cc.pieces_left =
          queue_pieces(scratch_jobs, job, c.window.data() + rc.window_offset, nullptr, res.chunk_bytes, pc.piece_bytes);
      continue;
    }
    if (behind && rc.declared) {
      // Its CRC is the writer's: answered now, the copy checks it.
      cc.behind = true;
      cc.state = CommitChunk::State::kCopied;
      cc.crc = rc.declared_crc;
      continue;
    }
    if (behind) {
      // Only its CRC is taken before the answer; the copy follows it.
      cc.behind = true;
      cc.state = CommitChunk::State::kCopying;
      job.with_crc = true;
      cc.pieces_left =
          queue_pieces(scratch_jobs, job, c.window.data() + rc.window_offset, nullptr, res.chunk_bytes, pc.piece_bytes);
      continue;
    }
    // No slot now: the chunks taken by this commit's copies are no
    // victims until they are in, so it waits for them.
    auto offset = acquire_slot(KvTier::kDram);
    if (!offset) {
      cc.state = CommitChunk::State::kDeferred;
      continue;
    }
    claim_slot(KvTier::kDram, *offset, res.ns_id);
    cc.state = CommitChunk::State::kCopying;
    cc.offset = *offset;
    // A large chunk goes out as pieces, copied on several cores at once;
    // the CRC is of what the slot holds, as above.
    job.with_crc = pc.crc;
    cc.pieces_left = queue_pieces(scratch_jobs, job, c.window.data() + rc.window_offset,
                                  slot_ptr(KvTier::kDram, *offset, res.ns_id), res.chunk_bytes, pc.piece_bytes);
  }
  pc.reservation = std::move(res);
  pc.copies_left = scratch_jobs.size();
  if (scratch_jobs.empty()) {
    if (!finish_commit(pc)) commits.emplace(commit_id, std::move(pc));
    return;
  }
  // A commit that finds no copy out (copies behind answered commits aside:
  // they run only when nothing else waits) copies its first piece here while the
  // workers copy the rest: alone, it would only wait for a worker to be
  // woken and scheduled (on a loaded host, longer than the copy), and the
  // loop has nothing else to do. Behind other commits' copies, every piece
  // goes to the workers.
  const bool loop_copies = copies_out == fill_copies_out;
  std::span<CopyJob> out(scratch_jobs);
  if (loop_copies) out = out.subspan(1);
  copier->submit(out);
  copies_out += out.size();
  counters.commit_copies_offloaded += out.size();
  PendingCommit& pending = commits.emplace(commit_id, std::move(pc)).first->second;
  if (!loop_copies) return;
  CopyJob& first = scratch_jobs.front();
  run_copy_job(first);
  if (piece_copied(pending, first) && finish_commit(pending)) {
    commits.erase(commit_id);
    return;
  }
  // The workers may still be busy with copies behind earlier answers: the
  // pieces none of them took yet the loop copies too, rather than wait.
  // They are taken back in the next poll(), like the workers' ones.
  while (copier->run_one()) {
  }
}

// One copy job of `pc` is back; true when it was the commit's last.
bool KvStore::Impl::piece_copied(PendingCommit& pc, const CopyJob& job) {
  CommitChunk& cc = pc.chunks[job.chunk];
  cc.piece_crcs[job.piece] = job.crc;
  if (--cc.pieces_left == 0) {
    cc.state = CommitChunk::State::kCopied;
    if (pc.crc || cc.to_ssd || cc.behind) {
      cc.crc = combine_piece_crcs(cc.piece_crcs, pc.reservation.chunk_bytes, pc.piece_bytes);
    }
  }
  return --pc.copies_left == 0;
}

bool KvStore::Impl::finish_commit(PendingCommit& pc, bool may_wait) {
  ClientState& c = *client(pc.client);  // cancel_commits ends a removed client's commits
  const bool write_through = ssd && ssd->config().sync == SsdSyncPolicy::kPerCommit;
  Reservation& res = pc.reservation;
  bool waits = false;
  // Each chunk is settled once: a commit that waits for DRAM slots comes
  // back here later for its deferred chunks only.
  for (CommitChunk& cc : pc.chunks) {
    ReservedChunk& rc = res.chunks[cc.reserved];
    KvOutcome done;
    if (cc.state == CommitChunk::State::kCopied && cc.behind) {
      // Its CRC is in: the copy starts behind the answer, into a slot
      // taken now. Without one, it is copied before the answer like any
      // chunk that found no slot.
      cc.behind = false;
      cc.state = CommitChunk::State::kDeferred;
      if (index.find(rc.key) == nullptr) {
        auto offset = acquire_slot(KvTier::kDram);
        if (!offset && reclaim_open_dram_lends() != 0) offset = acquire_slot(KvTier::kDram);
        if (offset) {
          cc.state = CommitChunk::State::kSettled;
          cc.outcome = start_fill(pc.client, c, res, rc, *offset, cc.crc);
          continue;
        }
      }
    }
    switch (cc.state) {
      case CommitChunk::State::kStored:
      case CommitChunk::State::kSettled: continue;
      case CommitChunk::State::kCopying:  // cannot happen: finished once every copy is back
      case CommitChunk::State::kCopied:
        if (cc.to_ssd) {
          done = commit_to_ssd(pc.client, c, res, rc, cc.crc, pc.on_ssd);
          break;
        }
        if (pc.crc && rc.declared && cc.crc != rc.declared_crc) {
          done = refuse_mismatch(cc.offset);
          break;
        }
        if (index.find(rc.key) != nullptr) {  // another commit stored it meanwhile
          arena(KvTier::kDram).slots.give(cc.offset);
          admission.record(rc.key);
          break;
        }
        done = index_copied(res, rc, cc.offset, pc.crc ? &cc.crc : nullptr, write_through);
        break;
      case CommitChunk::State::kDeferred: {
        if (index.find(rc.key) != nullptr || rc.cached) {  // stored meanwhile, or gone
          done = commit_inline(c, res, rc, write_through);
          break;
        }
        auto offset = acquire_slot(KvTier::kDram);
        // Slots lent to the log's open region come back only when it
        // fills, which may wait for this very writer: take them back.
        if (!offset && reclaim_open_dram_lends() != 0) offset = acquire_slot(KvTier::kDram);
        if (offset) {
          done = copy_into_slot(c, res, rc, *offset, write_through);
        } else if (may_wait && dram_slots_come_back()) {
          // Copies in flight and regions being written give slots back by
          // themselves: wait for them rather than refuse.
          waits = true;
          continue;
        } else {
          done = KvStatus::kRejected;  // every DRAM chunk is leased or being read
        }
        break;
      }
    }
    cc.state = CommitChunk::State::kSettled;
    cc.outcome = done;
  }
  if (waits) {
    if (!pc.waits_for_slots) ++commits_waiting;
    pc.waits_for_slots = true;
    return false;
  }
  if (pc.waits_for_slots) --commits_waiting;
  std::uint64_t committed = 0;
  KvOutcome first_failure;
  for (const CommitChunk& cc : pc.chunks) {
    if (cc.state == CommitChunk::State::kStored || cc.outcome.ok()) {
      ++committed;
    } else {
      note_failure(first_failure, cc.outcome);
    }
  }
  end_commit(pc.client, c, pc.request, res, pc.chunks.size(), committed, first_failure, pc.on_ssd);
  return true;
}

// Commits that wait for DRAM slots try again; each poll, while there are
// such commits, since slots come back from the workers and from the log.
void KvStore::Impl::retry_waiting_commits(bool may_wait) {
  for (auto it = commits.begin(); commits_waiting != 0 && it != commits.end();) {
    if (it->second.waits_for_slots && it->second.copies_left == 0 && finish_commit(it->second, may_wait)) {
      it = commits.erase(it);
    } else {
      ++it;
    }
  }
}

void KvStore::Impl::reap_commits() {
  scratch_copied.clear();
  copier->take_done(scratch_copied);
  copies_out -= std::min(copies_out, scratch_copied.size());
  for (const CopyJob& job : scratch_copied) {
    if (job.commit & kFillJob) {
      fill_piece_done(job);
      continue;
    }
    auto it = commits.find(job.commit);
    if (it == commits.end()) continue;  // cancelled: its client is gone
    if (!piece_copied(it->second, job)) continue;
    if (finish_commit(it->second)) commits.erase(it);
  }
}

void KvStore::Impl::cancel_commits(KvClientId client) {
  if (!copier || commits.empty()) return;
  bool any = false;
  for (const auto& [cid, pc] : commits) any = any || pc.client == client;
  if (!any) return;
  // Its queued copies are dropped and its running ones waited for; those
  // come back later and are ignored.
  const std::size_t dropped = copier->cancel(client);
  copies_out -= std::min(copies_out, dropped);
  for (auto it = commits.begin(); it != commits.end();) {
    PendingCommit& pc = it->second;
    if (pc.client != client) {
      ++it;
      continue;
    }
    for (const CommitChunk& cc : pc.chunks) {
      if (!cc.to_ssd && !cc.behind &&
          (cc.state == CommitChunk::State::kCopying || cc.state == CommitChunk::State::kCopied)) {
        arena(KvTier::kDram).slots.give(cc.offset);
      }
    }
    if (pc.waits_for_slots) --commits_waiting;
    --reservations_live;
    // A commit waiting for slots may have stored some chunks already.
    std::size_t stored = 0;
    for (const CommitChunk& cc : pc.chunks) {
      stored += cc.state == CommitChunk::State::kStored ||
                (cc.state == CommitChunk::State::kSettled && cc.outcome.ok());
    }
    counters.puts += stored;
    counters.put_aborts += pc.reservation.chunks.size() - stored;
    it = commits.erase(it);
  }
}

}  // namespace cxlpool::kvcache
