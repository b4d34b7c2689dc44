// SPDX-License-Identifier: Apache-2.0
// cxlpoold's KV-cache store service: owns the store engine (kvcache::KvStore),
// its arenas and SSD tier, and every connection's data path. The control
// socket sets things up (KvOpen, namespaces, status); requests themselves go
// through each connection's shared-memory rings, which the daemon's event
// loop serves with poll() -- without a system call per request while the
// loop is busy-polling, and through the SQ doorbell (an eventfd in the
// loop's epoll) when it sleeps.
//
// The SSD tier is opened and scanned when the daemon starts, so that a bad
// path or a damaged device stops it at once. The arenas are created with the
// first KV request of any kind: a daemon whose clients never use the store
// spends no pool capacity on it.
//
// Single-threaded: the daemon's event loop owns it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "../config.hpp"
#include "../metrics/prometheus_text.hpp"
#include "../region_pool.hpp"
#include "ssd_error_report.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/kvcache/namespace_access.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "cxlpool/proto/messages.hpp"
#include "kv_arenas.hpp"
#include "kv_connection.hpp"
#include "kv_remote.hpp"
#include "kv_ssd.hpp"
#include "kv_views.hpp"

namespace cxlpool::daemon {

// Member, and its metric's name after "kv.".
// clang-format off
#define CXLPOOL_KV_SERVICE_COUNTERS(X)                                                            \
  X(connections_opened, "connections_opened")                                                     \
  X(connections_closed, "connections_closed")                                                     \
  X(requests,           "ring_requests")           /* taken from the rings */                     \
  X(malformed_requests, "ring_malformed_requests") /* answered -EINVAL by the ring's checks */    \
  /* answered -EACCES: namespace not opened with the op's right */                                \
  X(denied_requests,    "ring_denied_requests")                                                   \
  X(completions,        "ring_completions")        /* published on the rings */                   \
  X(backlogged,         "ring_backlogged")         /* completions that waited for CQ room */      \
  X(broken_rings,       "ring_broken")             /* rings quarantined for breaking the rules */ \
  X(doorbells,          "doorbells")               /* wake-ups by a client's SQ eventfd */        \
  /* CQ eventfd kicks to clients asleep on their completions */                                   \
  X(client_wakeups,     "client_wakeups")                                                         \
  X(io_wakeups,         "io_wakeups")              /* wake-ups by the SSD completion eventfd */   \
  X(start_failures,     "start_failures")
// clang-format on

struct KvServiceCounters {
  CXLPOOL_KV_SERVICE_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_KV_SERVICE_COUNTERS)
};

struct KvNamespaceOpenResult {
  proto::KvNamespaceReply reply;
  // Read-only descriptors of the namespace's views (DRAM, then CXL) when
  // the reply grants reading; none otherwise.
  std::vector<UniqueFd> views;
};

struct KvOpenResult {
  proto::KvOpenReply reply;
  // In the reply's order: ring memfd, SQ eventfd, CQ eventfd, put window memfd.
  std::array<UniqueFd, 4> fds;
  int doorbell_fd = -1;  // the connection's SQ eventfd, for the daemon's epoll
};

class KvService {
 public:
  static Result<std::unique_ptr<KvService>> create(const KvStoreSection& config, RegionPool& pool);
  ~KvService();
  KvService(const KvService&) = delete;
  KvService& operator=(const KvService&) = delete;

  // Creates the connection's rings and put window and registers it with the
  // store, charged to `uid`'s quota (shared by all of the uid's connections). EBUSY: this session has one already; EINVAL: a ring geometry
  // outside the protocol's limits; the start's error when the store could
  // not be started.
  Result<KvOpenResult> open(uint64_t session_id, uid_t uid, const proto::KvOpen& request);
  // Forgets the connection: its leases and reservations go, its pending
  // completions are dropped. The caller takes its doorbell out of epoll
  // first. Unknown: no-op.
  void close(uint64_t session_id);
  // Revokes leases older than kvstore.lease_timeout_ms (counted in
  // kv.leases_expired); called from the daemon's one-second tick.
  void expire_leases();
  // Logs SSD log write failures and the chunks they dropped, at most one
  // line per 10 s carrying the counts since the previous line; called from
  // the daemon's tick. (The counters move when the failures happen.)
  void report_ssd_errors(uint64_t now_ns);
  [[nodiscard]] bool has_connection(uint64_t session_id) const { return connections_.contains(session_id); }
  // The SQ doorbell of a connection rang: resets it.
  void on_doorbell(uint64_t session_id);

  // Opens (or creates) a namespace for the session and grants it the rights
  // the namespace's mode gives `who` (docs/kvstore.md, "Isolation"); every
  // ring request of the session is checked against them. EINVAL: a mode with
  // bits outside 0666, a bad spec; EACCES: the mode gives `who` no right;
  // EPERM: the owner asked for a mode that takes rights away; ENOSPC: too
  // many namespaces; ENOMEM: no room to map the namespace's views.
  Result<KvNamespaceOpenResult> open_namespace(uint64_t session_id, const Requester& who,
                                               const proto::KvNamespaceOpen& request);
  // The namespaces `who` may read or write (all of them for an admin; a
  // recovered namespace nobody has opened yet only for an admin): another
  // tenant's model names and chunk counts are not everyone's to see.
  Result<proto::KvNamespacesReply> namespaces(const Requester& who);
  // EPERM: `who` is neither the namespace's owner nor an admin; ENOENT:
  // unknown id.
  Result<proto::KvNamespaceDropReply> drop_namespace(const Requester& who, uint64_t namespace_id);
  // Never fails: a store that cannot start says why in `detail`.
  proto::KvStatusReply status();

  // Serves every connection: takes their requests, hands them to the store,
  // publishes what finished. Returns the number of requests and completions
  // handled (0: nothing to do).
  size_t poll();
  // SSD reads are in flight and no descriptor will signal their end: the
  // loop must not sleep.
  [[nodiscard]] bool must_poll() const;
  // SSD reads are queued or in flight.
  [[nodiscard]] bool io_pending() const { return store_ && store_->io_in_flight() != 0; }
  // Before the loop sleeps: asks every client to ring its doorbell for new
  // requests. False when work is already waiting (do not sleep); disarm()
  // after waking either way.
  bool arm();
  void disarm();

  // The SSD device's completion eventfd once the store runs, else -1.
  [[nodiscard]] int completion_fd() const;
  void on_completion_fd();
  // The commit workers' eventfd once the store runs with them, else -1:
  // readable when copies finished (the next poll() finishes their commits).
  [[nodiscard]] int commit_fd() const;
  void on_commit_fd();
  // Commits whose copies are in flight, or copies behind answered commits.
  [[nodiscard]] bool commits_pending() const { return store_ && store_->copies_in_flight(); }

  // Shutdown: drops every connection, seals the SSD log's open region and
  // releases the store. The arenas go with the pool.
  void shutdown();

  // --- The store across the pod (kv_remote_gets.cpp).
  // A get that misses here asks `remote` (null: nobody) for the rest of its
  // prefix before the store answers it; every namespace view, now and
  // later, is registered with it.
  void set_remote(KvRemote* remote);
  // Pins, for a peer's one-sided read, the longest prefix of `keys` that
  // the namespace with fingerprint `fp` holds here, on any tier, and hands
  // it to `answer` (empty: a miss, or the store does not run): at once when
  // every chunk is in an arena, else once the chunks only on SSD were read
  // into arena slots (kv_peer_serve.cpp). Each pinned chunk stays where it
  // is until unpin_for_peer().
  void pin_for_peer(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys,
                    KvPeerPinAnswer answer);
  void unpin_for_peer(std::span<const proto::KvKey> keys);
  // How many leading keys the namespace with fingerprint `fp` holds here,
  // on any tier, as pin_for_peer would find them (a peer's probe; nothing
  // pinned, nothing counted).
  size_t held_prefix(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys) const;
  // Gets waiting for chunks from peers.
  [[nodiscard]] size_t remote_gets_waiting() const { return parked_.size(); }
  // --- Replicas (kv_replicas.cpp; docs/pods.md, "Replicas").
  // Holder `holder` asks this store to keep copies of `keys` of the
  // namespace with fingerprint `fp`: DRAM slots are reserved for the keys
  // missing here (within the fetches' share of DRAM) and the pod reads
  // them from the holder. Starts the store, and creates the namespace from
  // its fingerprint, when needed. Returns how many leading keys are taken
  // care of (here already, or being read); the others found no room.
  // `later`: they found none only because fetches in flight hold the
  // fetches' share of the slots, which the next finished fetch frees.
  size_t keep_replicas(const kvcache::NamespaceFingerprint& fp, const std::string& holder,
                       std::span<const proto::KvKey> keys, bool& later);

  [[nodiscard]] bool started() const { return store_ != nullptr; }
  // The store's settings as the [kvstore] section gives them.
  kvcache::KvStoreConfig store_config() const;
  void append_counters(std::vector<proto::Counter>& out) const;
  // Request durations by op, as "kv.op_duration.<op>".
  void append_histograms(std::vector<HistogramSample>& out) const;

 private:
  KvService(const KvStoreSection& config, RegionPool& pool) : config_(config), pool_(pool) {}
  // start() gives ENOTSUP for any failure, as the protocol answers a store
  // that cannot run; try_start() the cause.
  Result<void> start();
  Result<void> try_start();
  void deliver(kvcache::KvStoreCompletion&& done);
  void drain_backlog(KvConnection& c);
  // A completion reached the client's CQ: its request's duration is recorded.
  void published(KvConnection& c, const proto::KvCompletion& completion);
  void mark_broken(KvConnection& c, const std::string& why);
  void rebuild_active();
  std::string tier_name(kvcache::KvTier tier) const;
  // The owner of namespace `id`, or nullopt for one recovered from the SSD
  // log that nobody has opened since the start.
  const std::optional<kvcache::KvNamespaceOwner>& owner_of(uint32_t id);

  // A get whose missing chunks are being fetched from peers; the store
  // answers it when they are in (or not).
  struct ParkedGet {
    uint64_t client = 0;
    uint32_t ns_id = 0;
    proto::KvRequest request;
    std::vector<proto::KvKey> keys;       // the whole get
    std::vector<proto::KvKey> fetching;   // the keys asked of peers
    std::vector<uint64_t> offsets;        // their reserved DRAM slots
    // The chunks of the prefix found here, pinned while the get waits so
    // that the slots reserved for the rest cannot evict them.
    std::vector<proto::KvKey> held;
    // Gets that came meanwhile and miss at the same key: they wait for
    // this fetch rather than fetch the chunks again (or miss for want of
    // slots), and go to the store with it.
    std::vector<std::pair<uint64_t, proto::KvRequest>> followers;  // (client, request)
    std::vector<std::vector<proto::KvKey>> follower_keys;
  };
  // True when the get waits for peers (it is answered later).
  bool park_for_remote(const KvConnection& c, const proto::KvRequest& r, std::span<const proto::KvKey> keys);
  void finish_remote_gets();
  // A lookup that stops short here waits for a probe of the peers (true);
  // its answer then carries in result2 the chunks after the local prefix
  // that peers hold (kv_peer_serve.cpp).
  bool park_lookup(const KvConnection& c, const proto::KvRequest& r, std::span<const proto::KvKey> keys);
  void finish_lookups();
  void add_pod_prefix(kvcache::KvStoreCompletion& done);
  // Answers the peers' pins whose SSD reads finished.
  void answer_peer_pins();
  [[nodiscard]] bool peer_work() const {
    return !parked_.empty() || !peer_pins_.empty() || !parked_lookups_.empty() || !replica_fetches_.empty();
  }
  void register_views(uint32_t ns_id);
  // A put commit while peers keep copies: the keys it newly committed
  // (absent before, present after) go to remote_->replicate().
  // With commit workers the commit finishes in a later store poll: the
  // keys then wait in replicate_after_ for its completion.
  void commit_and_replicate(uint64_t client, const proto::KvRequest& r, std::span<const proto::KvKey> keys);
  // The completion of a commit in replicate_after_ came: its keys now
  // stored go to remote_->replicate().
  void replicate_committed(const kvcache::KvStoreCompletion& done);
  // A copy a peer asked for arrived (or not): what came whole is indexed.
  void finish_replica(const KvFetchResult& result);

  // A copy of a peer's chunks being read into reserved DRAM slots.
  struct ReplicaFetch {
    uint32_t ns_id = 0;
    std::vector<proto::KvKey> keys;
    std::vector<uint64_t> offsets;  // their reserved DRAM slots
  };

  KvStoreSection config_;
  RegionPool& pool_;
  KvRemote* remote_ = nullptr;
  std::unordered_map<uint64_t, ParkedGet> parked_;  // by ticket
  // The first key of each fetch in flight, and its ticket.
  std::unordered_map<kvcache::ChunkKey, uint64_t, kvcache::ChunkKeyHash> fetching_;
  uint64_t next_ticket_ = 1;
  uint64_t fetch_slots_ = 0;  // DRAM slots reserved for fetches now
  std::vector<KvFetchResult> fetched_;
  // Peers' pins waiting for SSD reads, by the store's ticket.
  std::unordered_map<uint64_t, KvPeerPinAnswer> peer_pins_;
  std::vector<kvcache::KvPeerLoad> peer_loads_;
  struct ParkedLookup {
    uint64_t client = 0;
    proto::KvRequest request;
    std::vector<proto::KvKey> keys;
    size_t have = 0;  // the prefix held here when it was parked
  };
  std::unordered_map<uint64_t, ParkedLookup> parked_lookups_;  // by ticket
  // Lookups submitted after their probe, by client and request id: the
  // prefix held here when probed, and the end of the prefix that this host
  // and its peers hold together.
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, std::pair<size_t, size_t>>> pod_prefix_;
  std::vector<KvProbeResult> probed_;
  std::unordered_map<uint64_t, ReplicaFetch> replica_fetches_;  // by ticket
  std::vector<proto::KvKey> replicate_scratch_;                  // reused by commit_and_replicate()
  // Commits whose copies run on the commit workers while peers keep
  // copies: the keys absent before each, by client and request id.
  struct CommitToReplicate {
    uint64_t client = 0;
    uint64_t request_id = 0;
    uint32_t ns_id = 0;
    std::vector<proto::KvKey> keys;
  };
  std::vector<CommitToReplicate> replicate_after_;
  KvArenaPlan plan_;
  kvcache::TierRates rates_;
  KvSsd ssd_;                     // until the store takes the SsdStore
  std::string ssd_detail_;        // engine and recovery, for status
  std::optional<KvArena> dram_arena_;
  std::optional<KvArena> cxl_arena_;
  std::unique_ptr<hal::PagePlacement> placement_;  // binds the views of NUMA tiers; may be null
  std::unique_ptr<KvViews> views_;                 // created with the store, outlives it
  std::optional<Error> start_error_;  // a failure a retry cannot fix
  std::unique_ptr<kvcache::KvStore> store_;
  std::unordered_map<uint64_t, std::unique_ptr<KvConnection>> connections_;
  // Namespace owners, index = id - 1; ids up to recovered_namespaces_ came
  // from the SSD log at start and have no owner until first opened.
  std::vector<std::optional<kvcache::KvNamespaceOwner>> owners_;
  uint32_t recovered_namespaces_ = 0;
  // Per session (whether or not it opened the data path yet): who it is and
  // the rights its namespace opens granted. A KvConnection points at its
  // session's table; unordered_map nodes do not move.
  std::unordered_map<uint64_t, KvSessionRights> rights_;
  std::vector<KvConnection*> active_;  // connections_ in a flat list for poll()
  proto::KvRequestBatch batch_;        // reused by poll()
  std::vector<kvcache::KvStoreCompletion> done_;
  SsdErrorReport ssd_errors_{config_.ssd_path};
  uint64_t registration_errors_logged_ = 0;  // ssd_registration_errors as of the last warning
  KvServiceCounters counters_;
  std::array<DurationHistogram, proto::kKvOpMax + 1> op_durations_;  // index: the op
};

}  // namespace cxlpool::daemon
