// SPDX-License-Identifier: Apache-2.0
// A peer's pin of chunks the store keeps only on SSD (docs/pods.md): the
// chunks are read into arena slots by the same asynchronous loads a get
// waits for, and pinned as they land; the answer waits for the last read.
// Unlike a get, nothing is charged to a client, and a read that fails only
// ends the prefix (the peer then recomputes or asks another holder).
#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

std::uint64_t KvStore::pin_for_peer_loading(std::uint32_t ns_id, std::span<const proto::KvKey> keys) {
  Impl& s = *impl_;
  const std::uint64_t pid = s.next_pending++;
  PendingGet& pg = s.pending_gets[pid];
  pg.for_peer = true;
  pg.ns_id = ns_id;
  // The prefix held on any tier, the resident part pinned first: the slots
  // the reads take below cannot evict it.
  for (const proto::KvKey& k : keys) {
    const ChunkKey key = to_chunk_key(k);
    const ChunkEntry* e = s.index.find(key);
    if (e == nullptr || e->info.ns_id != ns_id) break;
    const bool resident = !s.awaits_load(*e);
    if (resident && !s.index.pin(key).ok()) break;
    pg.keys.push_back(key);
    pg.pinned.push_back(resident ? kPinnedResident : 0);
  }
  for (std::size_t i = 0; i < pg.keys.size(); ++i) {
    if (pg.pinned[i] != 0) continue;
    const ChunkKey key = pg.keys[i];
    auto it = s.loads.find(key);
    if (it == s.loads.end()) {
      if (!s.start_load(key, ns_id)) {
        // No slot: the answer is the prefix before this chunk.
        for (std::size_t j = i; j < pg.keys.size(); ++j) {
          if (pg.pinned[j] != 0) s.unpin_key(pg.keys[j]);
        }
        pg.keys.resize(i);
        pg.pinned.resize(i);
        break;
      }
      it = s.loads.find(key);
    }
    it->second.waiters.emplace_back(pid, static_cast<std::uint32_t>(i));
    if (it->second.fill != 0) s.hurry_fill(it->second);
    ++pg.loads_left;
  }
  if (pg.loads_left == 0) {
    s.finish_pending_get(pid);
  } else {
    s.submit_loads();
  }
  return pid;
}

void KvStore::Impl::finish_peer_load(std::uint64_t id, PendingGet& pg) {
  std::size_t p = 0;
  while (p < pg.keys.size() && pg.pinned[p] != 0) ++p;
  for (std::size_t j = p; j < pg.keys.size(); ++j) {
    if (pg.pinned[j] != 0) unpin_key(pg.keys[j]);
  }
  KvPeerLoad& done = peer_loads_done.emplace_back();
  done.ticket = id;
  for (std::size_t i = 0; i < p; ++i) {
    const ChunkEntry* e = index.find(pg.keys[i]);
    if (e == nullptr || awaits_load(*e)) {  // cannot be while pinned; never serve it
      for (std::size_t j = i; j < p; ++j) unpin_key(pg.keys[j]);
      break;
    }
    done.keys.push_back(proto::KvKey{pg.keys[i].lo, pg.keys[i].hi});
    done.pins.push_back(KvPeerPin{.tier = e->info.tier,
                                  .ns_id = pg.ns_id,
                                  .offset = e->info.offset,
                                  .length = e->info.length,
                                  .crc = e->info.payload_crc,
                                  .crc_known = (e->info.flags & kChunkCrcKnown) != 0,
                                  .loaded = pg.pinned[i] == kPinnedLoaded});
  }
}

void KvStore::take_peer_loads(std::vector<KvPeerLoad>& out) {
  Impl& s = *impl_;
  for (KvPeerLoad& l : s.peer_loads_done) out.push_back(std::move(l));
  s.peer_loads_done.clear();
}

}  // namespace cxlpool::kvcache
