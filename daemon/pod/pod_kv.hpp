// SPDX-License-Identifier: Apache-2.0
// The KV store across a pod (docs/pods.md): this daemon as a holder and as
// a reader of chunks.
//   - Holder: a listener on [pod] address takes peers' control messages,
//     one thread per connection. A pin request goes to the event loop (the
//     store is single-threaded), which pins the longest prefix of the keys
//     it holds in an arena; the connection thread answers with each
//     chunk's region, offset, length and CRC-32C and keeps the pins until
//     the peer unpins them, closes the connection, or kPinTimeout passes.
//   - Reader: fetch threads take the jobs of gets that missed here, ask
//     the live members in turn to pin the missing keys, read the pinned
//     chunks with the transfer engine straight into the reserved DRAM
//     slots, check each chunk's CRC-32C against the holder's, unpin, and
//     hand the result back to the event loop through an eventfd.
// A member that died is out of the member table within its lease TTL, and
// until then its address refuses connections: its chunks are misses,
// never stale bytes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../config.hpp"
#include "../kvstore/kv_remote.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "pod_auth.hpp"
#include "pod_fabric.hpp"
#include "pod_kv_probe.hpp"
#include "pod_kv_replicas.hpp"
#include "pod_member.hpp"

namespace cxlpool::daemon {

class KvService;

// Member, and its metric's name after "pod.kv.".
// clang-format off
#define CXLPOOL_POD_KV_COUNTERS(X)                                                            \
  X(gets,        "remote_gets")   /* gets that asked peers for chunks they missed here */     \
  X(hits,        "remote_hits")   /* chunks fetched from peers */                             \
  X(misses,      "remote_misses") /* of those gets: no peer held the first missing chunk */   \
  X(bytes,       "remote_bytes")  /* bytes fetched */                                         \
  X(errors,      "remote_errors") /* failed reads, checksums or control exchanges */          \
  X(pins_served, "pins_served")   /* chunks pinned here for peers' reads */                   \
  X(ssd_loads_for_peers, "ssd_loads_for_peers") /* of those: read from SSD into DRAM for them */ \
  X(peer_connections, "peer_connections") /* control connections peers opened here */  \
  X(auth_failures, "auth_failures") /* control connections closed for failing or skipping the handshake */
// clang-format on

struct PodKvCounters {
  CXLPOOL_POD_KV_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_POD_KV_COUNTERS)
};

class PodKv final : public KvRemote {
 public:
  using MembersFn = std::function<std::vector<PodMember>()>;
  // Listens on config.address (when set) and starts the fetch threads.
  // With a secret, every control connection, both ways, starts with the
  // handshake of pod_auth.hpp.
  PodKv(const PodSection& config, std::string self_host, PodFabric& fabric, MembersFn members,
        uint64_t slot_bytes, PodSecret secret = {});
  ~PodKv() override;
  PodKv(const PodKv&) = delete;
  PodKv& operator=(const PodKv&) = delete;

  // Ends every thread; pending pin requests are answered empty.
  void stop();
  // Signalled when the event loop has work: pin requests, fetch results.
  [[nodiscard]] int event_fd() const { return event_fd_.get(); }
  // On the event loop: answers the queued pin and unpin requests.
  void on_event(KvService* kv);
  // Why peers cannot pin here ("" when they can).
  [[nodiscard]] const std::string& serve_error() const { return serve_error_; }
  [[nodiscard]] PodKvCounters counters() const;
  [[nodiscard]] PodKvProbeCounters probe_counters() const { return prober_->counters(); }

  bool has_peers() const override;
  void fetch(KvFetchJob job) override;
  void take_results(std::vector<KvFetchResult>& out) override;
  void register_view(uint32_t ns_id, kvcache::KvTier tier, std::span<std::byte> bytes) override;
  void probe(KvProbeJob job) override { prober_->probe(std::move(job)); }
  void take_probe_results(std::vector<KvProbeResult>& out) override { prober_->take_results(out); }
  // A host that serves no chunks (no listener) has none peers could copy.
  bool replicates() const override { return replicas_.enabled() && serve_error_.empty(); }
  void replicate(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys) override {
    replicas_.replicate(fp, keys);
  }
  [[nodiscard]] PodKvReplicaCounters replica_counters() const { return replicas_.counters(); }

 private:
  // Work for the event loop (the store is single-threaded); kv is null
  // when the store does not run.
  struct LoopTask {
    std::function<void(KvService* kv)> run;
  };
  struct Link;  // a reader's connection to one peer

  void accept_loop();
  // Joins the connection threads that have returned.
  void reap_connections();
  void serve(UniqueFd fd);
  // Queues a task for the event loop; false once stopping.
  bool post(const std::shared_ptr<LoopTask>& task);
  // Runs `run` on the event loop and waits for the answer it gives; nullopt
  // when the daemon stops first.
  template <typename T>
  std::optional<T> ask_loop(std::function<void(KvService*, const std::shared_ptr<LoopAnswer<T>>&)> run);
  bool stopping() const;
  void wake();

  void fetch_loop();
  KvFetchResult run_job(const KvFetchJob& job, std::vector<std::unique_ptr<Link>>& links);
  // Fetches a prefix of keys [from, ...) from one peer; how many arrived.
  // `failed`: a read or checksum failed, which ends the job's prefix.
  size_t fetch_from(Link& link, const KvFetchJob& job, size_t from, KvFetchResult& result, bool& failed);
  void count(const std::function<void(PodKvCounters&)>& change);
  // Counts and logs (rate-limited) a control connection closed for its handshake.
  // Makes a link of this host authenticate its connections (a pod with a
  // secret).
  void secure_link(KvPeerLink& link);
  void auth_failed(const std::string& who, const Error& error);

  PodSection config_;
  std::string self_;
  PodFabric& fabric_;
  MembersFn members_;
  uint64_t slot_bytes_;
  PodSecret secret_;  // empty: connections are not authenticated
  LogLimiter auth_log_{10'000'000'000ULL};
  UniqueFd event_fd_;
  UniqueFd listen_fd_;
  UniqueFd stop_fd_;  // wakes the accept thread and the connections' polls
  std::string serve_error_;

  mutable std::mutex mutex_;
  std::condition_variable jobs_cv_;
  bool stopping_ = false;
  std::deque<std::shared_ptr<LoopTask>> tasks_;
  std::deque<KvFetchJob> jobs_;
  std::vector<KvFetchResult> results_;
  PodKvCounters counters_;
  std::vector<std::thread> connections_;
  // Connection threads that have returned, joined by the accept thread
  // within a second: a peer that connects over and over (one that fails
  // the handshake, say) cannot pile up exited threads.
  std::vector<std::thread::id> finished_;
  std::atomic<uint32_t> live_connections_{0};

  // Copies of puts on peers, and peers' puts here ([pod] replica_num).
  PodKvReplicas replicas_;

  std::thread acceptor_;
  std::vector<std::thread> fetchers_;
  std::unique_ptr<PodKvProbe> prober_;
};

}  // namespace cxlpool::daemon
