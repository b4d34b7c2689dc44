// SPDX-License-Identifier: Apache-2.0
// The KV service's side of replicas (docs/pods.md, "Replicas"). As a
// holder: after a put commit, the chunks it newly committed are handed to
// the pod, which has peers copy them; the put is answered as usual, at
// once. As a target: a holder's request becomes a fetch job like a get's
// miss (DRAM slots reserved, the pod reads the chunks into them), and what
// arrives whole is indexed as a local chunk. The event loop never waits.
#include <algorithm>

#include "../logging.hpp"
#include "kv_service.hpp"

namespace cxlpool::daemon {

void KvService::commit_and_replicate(uint64_t client, const proto::KvRequest& r, std::span<const proto::KvKey> keys) {
  const auto ns_id = static_cast<uint32_t>(r.namespace_id);
  auto here = [&](const proto::KvKey& k) { return store_->cached_prefix(ns_id, std::span(&k, 1)) == 1; };
  // Keys stored before (by another client, or fetched from a peer) were
  // replicated by whoever put them, if at all.
  replicate_scratch_.clear();
  // Not the checksum records a commit may carry after its keys.
  for (const proto::KvKey& k : proto::kv_request_keys(r, keys)) {
    if (!here(k)) replicate_scratch_.push_back(k);
  }
  const size_t in_flight = store_->commits_in_flight();
  store_->submit(client, r, keys);
  if (replicate_scratch_.empty()) return;
  if (store_->commits_in_flight() > in_flight) {
    replicate_after_.push_back({client, r.request_id, ns_id, replicate_scratch_});
    return;
  }
  std::erase_if(replicate_scratch_, [&](const proto::KvKey& k) { return !here(k); });
  if (replicate_scratch_.empty()) return;
  if (const auto fp = store_->fingerprint_of(ns_id)) remote_->replicate(*fp, replicate_scratch_);
}

void KvService::replicate_committed(const kvcache::KvStoreCompletion& done) {
  const auto it = std::find_if(replicate_after_.begin(), replicate_after_.end(), [&](const CommitToReplicate& c) {
    return c.client == done.client && c.request_id == done.completion.request_id;
  });
  if (it == replicate_after_.end()) return;
  CommitToReplicate pending = std::move(*it);
  replicate_after_.erase(it);
  std::erase_if(pending.keys,
                [&](const proto::KvKey& k) { return store_->cached_prefix(pending.ns_id, std::span(&k, 1)) != 1; });
  if (pending.keys.empty() || remote_ == nullptr) return;
  if (const auto fp = store_->fingerprint_of(pending.ns_id)) remote_->replicate(*fp, pending.keys);
}

size_t KvService::keep_replicas(const kvcache::NamespaceFingerprint& fp, const std::string& holder,
                                std::span<const proto::KvKey> keys, bool& later) {
  later = false;
  if (remote_ == nullptr || keys.empty() || !start()) return 0;
  // A namespace no client here opened yet is created from its fingerprint;
  // a client that opens its spec later finds the copies.
  const auto ns_id = store_->namespace_for_peer(fp);
  if (!ns_id) return 0;
  if (!views_->has(*ns_id)) {
    if (auto ok = views_->ensure(*ns_id); !ok) {
      logger("kvstore")->warn("copies of a peer's chunks not kept: {}", ok.error().message);
      return 0;
    }
    register_views(*ns_id);
  }
  // Copies share the fetches' quarter of the DRAM slots with gets that
  // wait for peers.
  const uint64_t limit = std::max<uint64_t>(1, dram_arena_->bytes.size() / config_.slot_bytes / 4);
  ReplicaFetch fetch;
  fetch.ns_id = *ns_id;
  KvFetchJob job;
  job.fp = fp;
  job.ns_id = *ns_id;
  job.replica = true;
  job.holder = holder;
  size_t taken = 0;
  for (const proto::KvKey& k : keys) {
    if (store_->cached_prefix(*ns_id, std::span(&k, 1)) == 1) {
      ++taken;
      continue;
    }
    if (fetch_slots_ + job.keys.size() >= limit) {
      later = fetch_slots_ != 0;
      break;
    }
    auto offset = store_->reserve_fetch_slot(*ns_id);
    if (!offset) break;
    fetch.keys.push_back(k);
    fetch.offsets.push_back(*offset);
    job.keys.push_back(k);
    job.offsets.push_back(*offset);
    job.slots.push_back(views_->slot(kvcache::KvTier::kDram, *offset, *ns_id));
  }
  if (job.keys.empty()) return taken;
  taken += job.keys.size();
  fetch_slots_ += job.keys.size();
  job.ticket = next_ticket_++;
  replica_fetches_.emplace(job.ticket, std::move(fetch));
  remote_->fetch(std::move(job));
  return taken;
}

void KvService::finish_replica(const KvFetchResult& result) {
  auto it = replica_fetches_.find(result.ticket);
  if (it == replica_fetches_.end()) return;
  const ReplicaFetch& f = it->second;
  for (size_t i = 0; i < f.keys.size(); ++i) {
    if (i < result.chunks.size()) {
      const KvFetchedChunk& chunk = result.chunks[i];
      const kvcache::KvStatus indexed = store_->commit_fetch_slot(f.ns_id, f.keys[i], f.offsets[i], chunk.length, chunk.crc);
      if (indexed != kvcache::KvStatus::kOk) {
        logger("kvstore")->warn("a copy of a peer's chunk was not indexed: {}", kvcache::to_string(indexed));
      }
    } else {
      store_->cancel_fetch_slot(f.offsets[i]);
    }
  }
  fetch_slots_ -= f.keys.size();
  replica_fetches_.erase(it);
}

}  // namespace cxlpool::daemon
