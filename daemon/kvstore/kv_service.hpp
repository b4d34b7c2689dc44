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
#include "../region_pool.hpp"
#include "ssd_error_report.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "cxlpool/proto/messages.hpp"
#include "kv_arenas.hpp"
#include "kv_connection.hpp"
#include "kv_ssd.hpp"

namespace cxlpool::daemon {

struct KvServiceCounters {
  uint64_t connections_opened = 0;
  uint64_t connections_closed = 0;
  uint64_t requests = 0;            // taken from the rings
  uint64_t malformed_requests = 0;  // answered -EINVAL by the ring's checks
  uint64_t completions = 0;         // published on the rings
  uint64_t backlogged = 0;          // completions that waited for CQ room
  uint64_t broken_rings = 0;        // rings quarantined for breaking the rules
  uint64_t doorbells = 0;           // wake-ups by a client's SQ eventfd
  uint64_t client_wakeups = 0;      // CQ eventfd kicks to clients asleep on their completions
  uint64_t io_wakeups = 0;          // wake-ups by the SSD completion eventfd
  uint64_t start_failures = 0;
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

  Result<proto::KvNamespaceReply> open_namespace(const proto::KvNamespaceOpen& request);
  Result<proto::KvNamespacesReply> namespaces();
  Result<proto::KvNamespaceDropReply> drop_namespace(uint64_t namespace_id);
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

  // Shutdown: drops every connection, seals the SSD log's open region and
  // releases the store. The arenas go with the pool.
  void shutdown();

  [[nodiscard]] bool started() const { return store_ != nullptr; }
  // The store's settings as the [kvstore] section gives them.
  kvcache::KvStoreConfig store_config() const;
  void append_counters(std::vector<proto::Counter>& out) const;

 private:
  KvService(const KvStoreSection& config, RegionPool& pool) : config_(config), pool_(pool) {}
  // start() gives ENOTSUP for any failure, as the protocol answers a store
  // that cannot run; try_start() the cause.
  Result<void> start();
  Result<void> try_start();
  void deliver(kvcache::KvStoreCompletion&& done);
  void drain_backlog(KvConnection& c);
  void mark_broken(KvConnection& c, const std::string& why);
  void rebuild_active();
  std::string tier_name(kvcache::KvTier tier) const;

  KvStoreSection config_;
  RegionPool& pool_;
  KvArenaPlan plan_;
  kvcache::TierRates rates_;
  KvSsd ssd_;                     // until the store takes the SsdStore
  std::string ssd_detail_;        // engine and recovery, for status
  std::optional<KvArena> dram_arena_;
  std::optional<KvArena> cxl_arena_;
  std::optional<Error> start_error_;  // a failure a retry cannot fix
  std::unique_ptr<kvcache::KvStore> store_;
  std::unordered_map<uint64_t, std::unique_ptr<KvConnection>> connections_;
  std::vector<KvConnection*> active_;  // connections_ in a flat list for poll()
  proto::KvRequestBatch batch_;        // reused by poll()
  std::vector<kvcache::KvStoreCompletion> done_;
  SsdErrorReport ssd_errors_{config_.ssd_path};
  KvServiceCounters counters_;
};

}  // namespace cxlpool::daemon
