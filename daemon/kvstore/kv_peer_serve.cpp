// SPDX-License-Identifier: Apache-2.0
// The KV service's side of two exchanges with the pod's peers (docs/pods.md):
//   - serving a peer's pin: the chunks it asks for that are only on SSD
//     here are read into arena slots first (the store's asynchronous loads;
//     the event loop never waits for the disk), and the answer goes out
//     once they are pinned;
//   - a client's lookup that stops short here: held back while the pod
//     side probes the peers, then answered by the store as usual, with the
//     chunks after the local prefix that peers hold in result2.
#include <algorithm>

#include "kv_service.hpp"

namespace cxlpool::daemon {
namespace {

// Lookups waiting for a probe at once; more are answered for this host only.
constexpr size_t kMaxParkedLookups = 256;
// Keys after the local prefix a probe asks about (one pin's worth).
constexpr size_t kMaxProbeKeys = 64;

}  // namespace

void KvService::pin_for_peer(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys,
                             KvPeerPinAnswer answer) {
  if (!store_ || !views_) {
    (void)answer({});
    return;
  }
  const auto ns_id = store_->namespace_of(fp);
  if (!ns_id || !views_->has(*ns_id)) {
    (void)answer({});
    return;
  }
  const uint64_t ticket = store_->pin_for_peer_loading(*ns_id, keys);
  peer_pins_.emplace(ticket, std::move(answer));
  answer_peer_pins();  // at once when nothing had to be read
}

void KvService::answer_peer_pins() {
  peer_loads_.clear();
  store_->take_peer_loads(peer_loads_);
  for (kvcache::KvPeerLoad& load : peer_loads_) {
    auto it = peer_pins_.find(load.ticket);
    if (it == peer_pins_.end()) {
      unpin_for_peer(load.keys);
      continue;
    }
    KvPeerPinAnswer answer = std::move(it->second);
    peer_pins_.erase(it);
    std::vector<KvPeerChunk> chunks;
    chunks.reserve(load.pins.size());
    for (const kvcache::KvPeerPin& pin : load.pins) {
      chunks.push_back({.region_key = kv_view_region_key(pin.ns_id, pin.tier),
                        .offset = pin.offset,
                        .length = pin.length,
                        .crc = pin.crc,
                        .crc_known = pin.crc_known,
                        .loaded = pin.loaded,
                        .bytes = views_->slot(pin.tier, pin.offset, pin.ns_id)});
    }
    // The peer's connection went meanwhile: nobody will unpin them.
    if (!answer(std::move(chunks))) unpin_for_peer(load.keys);
  }
}

size_t KvService::held_prefix(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys) const {
  if (!store_ || !views_) return 0;
  // What a pin would find: a namespace only recovered from the SSD log,
  // with no views yet, cannot be read by peers.
  const auto ns_id = store_->namespace_of(fp);
  return ns_id && views_->has(*ns_id) ? store_->cached_prefix(*ns_id, keys) : 0;
}

bool KvService::park_lookup(const KvConnection& c, const proto::KvRequest& r, std::span<const proto::KvKey> keys) {
  if (keys.empty() || parked_lookups_.size() >= kMaxParkedLookups || !remote_->has_peers()) return false;
  const auto ns_id = static_cast<uint32_t>(r.namespace_id);
  const auto fp = store_->fingerprint_of(ns_id);
  if (!fp) return false;
  const size_t have = store_->cached_prefix(ns_id, keys);
  if (have == keys.size()) return false;
  KvProbeJob job;
  job.ticket = next_ticket_++;
  job.fp = *fp;
  const size_t asked = std::min(keys.size() - have, kMaxProbeKeys);
  job.keys.assign(keys.begin() + static_cast<std::ptrdiff_t>(have),
                  keys.begin() + static_cast<std::ptrdiff_t>(have + asked));
  ParkedLookup parked;
  parked.client = c.id;
  parked.request = r;
  parked.keys.assign(keys.begin(), keys.end());
  parked.have = have;
  parked_lookups_.emplace(job.ticket, std::move(parked));
  remote_->probe(std::move(job));
  return true;
}

void KvService::finish_lookups() {
  probed_.clear();
  remote_->take_probe_results(probed_);
  for (const KvProbeResult& result : probed_) {
    auto it = parked_lookups_.find(result.ticket);
    if (it == parked_lookups_.end()) continue;
    ParkedLookup& p = it->second;
    // A client that went meanwhile gets nothing.
    if (connections_.contains(p.client)) {
      pod_prefix_[p.client][p.request.request_id] = {p.have, p.have + result.held};
      store_->submit(p.client, p.request, p.keys);
    }
    parked_lookups_.erase(it);
  }
}

void KvService::add_pod_prefix(kvcache::KvStoreCompletion& done) {
  if (done.completion.op != static_cast<uint8_t>(proto::KvOp::kLookup) || !done.outcome.ok()) return;
  auto client = pod_prefix_.find(done.client);
  if (client == pod_prefix_.end()) return;
  auto it = client->second.find(done.completion.request_id);
  if (it == client->second.end()) return;
  // The local prefix may have grown since the probe (a fetch landed): the
  // peers' part is what lies beyond it. One that shrank (a chunk deleted)
  // ends where nothing is known: no peers' part.
  const uint64_t local = done.completion.result0;
  const auto [have, end] = it->second;
  done.completion.result2 = local >= have && end > local ? end - local : 0;
  client->second.erase(it);
}

}  // namespace cxlpool::daemon
