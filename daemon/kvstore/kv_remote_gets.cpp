// SPDX-License-Identifier: Apache-2.0
// The KV service's side of the store across the pod. A get whose prefix
// stops short here is held back: DRAM slots are reserved for the keys it
// misses (at most kMaxFetchKeys of them), the pod reads those chunks from
// the peers that hold them straight into the slots, and once the result is
// back the chunks that arrived whole are indexed and the get goes to the
// store as if it had just come in, so it is answered with the usual lease.
// The event loop never waits: it hands out a job and takes results.
#include <algorithm>

#include "../logging.hpp"
#include "kv_service.hpp"

namespace cxlpool::daemon {
namespace {

// Keys of one get asked of peers at once (the rest of a longer prefix is
// recomputed or asked by the next get).
constexpr size_t kMaxFetchKeys = 64;

}  // namespace

void KvService::register_views(uint32_t ns_id) {
  if (remote_ == nullptr || !views_) return;
  for (const auto tier : {kvcache::KvTier::kDram, kvcache::KvTier::kCxl}) {
    const std::span<std::byte> bytes = views_->view_bytes(tier, ns_id);
    if (!bytes.empty()) remote_->register_view(ns_id, tier, bytes);
  }
}

void KvService::set_remote(KvRemote* remote) {
  remote_ = remote;
  if (!store_ || !views_) return;
  for (uint32_t id = 1; id <= store_->namespace_count(); ++id) {
    if (views_->has(id)) register_views(id);
  }
}

bool KvService::park_for_remote(const KvConnection& c, const proto::KvRequest& r,
                                std::span<const proto::KvKey> keys) {
  if (keys.empty() || !remote_->has_peers()) return false;
  const auto ns_id = static_cast<uint32_t>(r.namespace_id);
  const auto fp = store_->fingerprint_of(ns_id);
  if (!fp || !views_ || !views_->has(ns_id)) return false;
  const size_t have = store_->cached_prefix(ns_id, keys);
  if (have == keys.size()) return false;
  const kvcache::ChunkKey first{keys[have].hi, keys[have].lo};
  if (auto it = fetching_.find(first); it != fetching_.end()) {
    ParkedGet& leader = parked_.at(it->second);
    leader.followers.emplace_back(c.id, r);
    leader.follower_keys.emplace_back(keys.begin(), keys.end());
    return true;
  }
  // A quarter of the DRAM slots at most wait for peers: local puts and
  // gets keep the rest.
  const uint64_t limit = std::max<uint64_t>(1, dram_arena_->bytes.size() / config_.slot_bytes / 4);
  const size_t want = std::min({keys.size() - have, kMaxFetchKeys, static_cast<size_t>(limit - std::min(limit, fetch_slots_))});
  if (want == 0) return false;
  ParkedGet parked;
  parked.client = c.id;
  parked.ns_id = ns_id;
  parked.request = r;
  parked.keys.assign(keys.begin(), keys.end());
  for (size_t i = 0; i < have; ++i) {
    if (store_->pin_for_peer(ns_id, keys[i]).ok()) parked.held.push_back(keys[i]);
  }
  KvFetchJob job;
  job.fp = *fp;
  job.ns_id = ns_id;
  for (size_t i = have; i < have + want; ++i) {
    auto offset = store_->reserve_fetch_slot(ns_id);
    if (!offset) break;
    parked.fetching.push_back(keys[i]);
    parked.offsets.push_back(*offset);
    job.keys.push_back(keys[i]);
    job.offsets.push_back(*offset);
    job.slots.push_back(views_->slot(kvcache::KvTier::kDram, *offset, ns_id));
  }
  if (job.keys.empty()) {
    unpin_for_peer(parked.held);
    return false;
  }
  fetch_slots_ += job.keys.size();
  job.ticket = next_ticket_++;
  fetching_.emplace(first, job.ticket);
  parked_.emplace(job.ticket, std::move(parked));
  remote_->fetch(std::move(job));
  return true;
}

void KvService::finish_remote_gets() {
  fetched_.clear();
  remote_->take_results(fetched_);
  for (const KvFetchResult& result : fetched_) {
    auto it = parked_.find(result.ticket);
    if (it == parked_.end()) {
      finish_replica(result);
      continue;
    }
    ParkedGet& p = it->second;
    for (size_t i = 0; i < p.fetching.size(); ++i) {
      if (i < result.chunks.size()) {
        const KvFetchedChunk& chunk = result.chunks[i];
        const kvcache::KvStatus indexed =
            store_->commit_fetch_slot(p.ns_id, p.fetching[i], p.offsets[i], chunk.length, chunk.crc);
        if (indexed != kvcache::KvStatus::kOk) {
          logger("kvstore")->warn("a chunk fetched from a peer was not indexed: {}", kvcache::to_string(indexed));
        }
      } else {
        store_->cancel_fetch_slot(p.offsets[i]);
      }
    }
    fetch_slots_ -= p.fetching.size();
    fetching_.erase(kvcache::ChunkKey{p.fetching.front().hi, p.fetching.front().lo});
    // A client may have gone meanwhile; the chunks stay for the next get.
    if (connections_.contains(p.client)) store_->submit(p.client, p.request, p.keys);
    for (size_t f = 0; f < p.followers.size(); ++f) {
      const auto& [client, request] = p.followers[f];
      if (connections_.contains(client)) store_->submit(client, request, p.follower_keys[f]);
    }
    // The gets hold their own pins now.
    unpin_for_peer(p.held);
    parked_.erase(it);
  }
}

void KvService::unpin_for_peer(std::span<const proto::KvKey> keys) {
  if (!store_) return;
  for (const proto::KvKey& key : keys) store_->unpin_for_peer(key);
}

}  // namespace cxlpool::daemon
