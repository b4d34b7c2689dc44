// SPDX-License-Identifier: Apache-2.0
// Replicas of the KV store across a pod (docs/pods.md, "Replicas"). With
// [pod] replica_num = n > 1, the chunks a put commits here are copied to
// n - 1 other live members:
//   - Holder: the event loop hands the keys a put committed to
//     replicate(), which only queues them (bounded: a put that finds the
//     queue full is not replicated, and counted). A sender thread picks the
//     targets by rendezvous hashing of the put's first key over the live
//     members with an address and asks each to keep a copy (kReplicate),
//     going down the ranking past members that do not answer.
//   - Target: a peer's request is queued (bounded) for the event loop,
//     which reserves DRAM slots for the keys missing here and hands the
//     pod's fetch threads a job: the same pin, one-sided read, CRC check
//     and unpin as a get that missed, asking the holder first. The chunks
//     that arrive whole are indexed as local chunks.
// Replication is asynchronous: a put is acknowledged once committed here,
// so a holder that dies before its peers pulled the copies loses them.
#pragma once

#include "kv_peer_link.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "cxlpool/proto/kv_ring.hpp"
#include "kv_peer_wire.hpp"
#include "pod_member.hpp"

namespace cxlpool::daemon {

class KvService;

// Member, and its metric's name after "pod.kv.".
// clang-format off
#define CXLPOOL_POD_KV_REPLICA_COUNTERS(X)                                                                  \
  X(sent,    "replications_sent")   /* requests to keep copies that a peer accepted */                        \
  X(chunks,  "replicated_chunks")   /* chunks copied here from peers' puts */                                 \
  X(errors,  "replication_errors")  /* requests no peer answered, copies that brought fewer chunks than asked */ \
  /* chunks not replicated: a full queue, too few members, a peer that refused or had no room */                \
  X(dropped, "replication_dropped")
// clang-format on

struct PodKvReplicaCounters {
  CXLPOOL_POD_KV_REPLICA_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_POD_KV_REPLICA_COUNTERS)
};

// The rendezvous (highest random weight) rank of `host` for `key`: the same
// on every host and in every build.
uint64_t replica_weight(const proto::KvKey& key, std::string_view host);
// The members that may hold copies of a put whose first key is `key`, best
// first: every member other than `self` with an address, by descending
// weight (ties by name). The first replica_num - 1 that accept hold them.
// Adding or removing a member moves only the copies it ranks first for.
std::vector<PodMember> replica_candidates(const proto::KvKey& key, std::string_view self,
                                          std::span<const PodMember> members);

class PodKvReplicas {
 public:
  using MembersFn = std::function<std::vector<PodMember>()>;
  // replica_num: [pod] replica_num (copies including this host's). `wake`
  // signals the event loop (the pod's eventfd). Starts the sender thread
  // when replica_num > 1.
  PodKvReplicas(uint32_t replica_num, std::string self, MembersFn members, std::function<void()> wake,
                std::function<void(KvPeerLink&)> setup_link = {});
  ~PodKvReplicas();
  PodKvReplicas(const PodKvReplicas&) = delete;
  PodKvReplicas& operator=(const PodKvReplicas&) = delete;

  // Ends the sender thread; requests still queued are dropped (counted).
  void stop();
  // Whether puts committed here are copied to peers.
  [[nodiscard]] bool enabled() const { return replica_num_ > 1; }

  // Holder, on the event loop: a put committed these keys of namespace
  // `fp`. Queues them and returns at once.
  void replicate(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys);

  // Target, on a connection thread: holder `request.from` asks for copies.
  // Queues the request for the event loop; how many keys were taken on
  // (0: the queue is full, or stopping).
  uint32_t accept(KvReplicateRequest request);
  // Target, on the event loop: hands the queued requests to the store
  // (null: no store; they are dropped). Keys that found no room only
  // because fetches in flight hold the fetches' share of the DRAM slots
  // stay queued, first, for the next call (a finished fetch wakes the
  // loop); the others that found none are dropped.
  void on_event(KvService* kv);
  // Target, on a fetch thread: a copy job ended with `copied` of `asked`
  // chunks read whole.
  void copied(size_t copied, size_t asked);

  [[nodiscard]] PodKvReplicaCounters counters() const;

 private:
  struct Outgoing {
    kvcache::NamespaceFingerprint fp;
    std::vector<proto::KvKey> keys;
  };
  struct Connection;  // the sender's control connection to one peer

  void send_loop();
  void send(const Outgoing& put, std::vector<std::unique_ptr<Connection>>& connections);

  uint32_t replica_num_;
  std::string self_;
  MembersFn members_;
  std::function<void()> wake_;
  // Run on each new link (the pod's authentication, when it has a secret).
  std::function<void(KvPeerLink&)> setup_link_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::deque<Outgoing> outgoing_;
  size_t outgoing_keys_ = 0;
  std::deque<KvReplicateRequest> incoming_;
  size_t incoming_keys_ = 0;
  PodKvReplicaCounters counters_;
  std::thread sender_;
};

}  // namespace cxlpool::daemon
