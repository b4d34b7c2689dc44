// SPDX-License-Identifier: Apache-2.0
// cxlpoold's top layer: owns the control socket, the pool, the sessions and
// the single event loop (epoll) that serves them, and reacts to signals
// (SIGTERM/SIGINT: clean shutdown, SIGHUP: reload).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ckpt/ckpt_service.hpp"
#include "config.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/sysfs_root.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/backend.hpp"
#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/tiering/client_report_source.hpp"
#include "devpool/devpool_service.hpp"
#include "gpu/gpu_host_alloc.hpp"
#include "kvstore/kv_service.hpp"
#include "metrics_http.hpp"
#include "migration_worker.hpp"
#include "pod/pod_fabric.hpp"
#include "pod/pod_kv.hpp"
#include "pod/pod_membership.hpp"
#include "region_pool.hpp"
#include "session.hpp"
#include "tiering/tiering_service.hpp"
#include "weights/weights_service.hpp"

namespace cxlpool::daemon {

// [pod] host, else the host name (else "localhost" when that is no valid name).
std::string pod_host_name(const PodSection& config);

// epoll tags of the KV store's descriptors (the others are in daemon.cpp):
// the SSD completion eventfd, the commit workers' eventfd, and each
// connection's SQ doorbell as its session id with kKvDoorbellBit set.
inline constexpr uint64_t kTagKvIo = 8;
inline constexpr uint64_t kTagKvCommits = 13;
inline constexpr uint64_t kKvDoorbellBit = 1ull << 62;

// The clients.* and control.* counters once: member, metric name.
// clang-format off
#define CXLPOOL_DAEMON_COUNTERS(X)                                                                        \
  X(clients_accepted,         "clients.accepted")                                                         \
  X(clients_refused,          "clients.refused")          /* every refused connection */                  \
  X(clients_refused_per_uid,  "clients.refused_per_uid")  /* of them: max_clients_per_uid */              \
  X(clients_refused_reserved, "clients.refused_reserved") /* of them: the admin_reserved_clients slots */ \
  X(clients_closed,           "clients.closed")                                                           \
  X(requests,                 "control.requests")                                                         \
  X(request_errors,           "control.request_errors")                                                   \
  X(malformed_messages,       "control.malformed_messages")                                               \
  X(admin_denied,             "control.admin_denied")
// clang-format on

struct DaemonCounters {
  CXLPOOL_DAEMON_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_DAEMON_COUNTERS)
  // Exported as daemon.reloads, ahead of the clients.* figures.
  uint64_t reloads = 0;
  std::map<std::string, uint64_t> by_type;
};

class Daemon {
 public:
  // Builds tiers and the pool, takes the state-dir lock and binds the socket.
  static Result<std::unique_ptr<Daemon>> create(Config config, std::filesystem::path state_dir,
                                                std::optional<std::filesystem::path> config_path);
  ~Daemon();

  // Serves until SIGTERM/SIGINT; returns the process exit status.
  int run();

  // The access source fed by every connection's access-report ring
  // (AccessRingOpen). Drained once a second by the event loop; collect() it
  // from the event-loop thread (its resolver reads the session table).
  tiering::ClientReportSource& client_reports() { return *client_reports_; }

 private:
  struct Reply {
    proto::Message message;
    UniqueFd fd;           // sent with SCM_RIGHTS when valid, then closed
    int borrowed_fd = -1;  // sent with SCM_RIGHTS when >= 0, owned by the pool
    bool deferred = false; // the reply is sent later (a migration or a weights load in progress)
    std::vector<UniqueFd> more_fds;  // sent after the two above, in order, then closed
  };

  Daemon() = default;
  Result<void> setup_socket();
  Result<void> setup_loop();
  void accept_clients();
  void serve(Session& session);
  void close_session(uint64_t id);
  void handle_signal();
  void reload();
  void tick();
  void finish_migrations();
  // Sends the deferred WeightsLoad/WeightsOpen replies of finished copies.
  void finish_weight_loads();
  // Sends a reply that waited for a worker, or the error that ended its
  // task; a client that cannot take it is closed.
  void send_deferred(Session& session, uint32_t request_id, const Result<proto::Message>& reply);

  // Calls the handle() overload of the message's type (handlers.cpp).
  Result<Reply> dispatch(Session& session, const proto::Message& message);
  // One handler per request type of message_table.hpp: dispatch() does not
  // compile while one is missing. Each validates what the codec cannot know
  // (ids, permissions, limits) and answers with the request's ReplyTo type,
  // or defers the reply. Grouped by the file that holds them.
  // daemon_handlers.cpp: the session and what the daemon reports of itself.
  Result<Reply> handle(Session& session, const proto::Hello& request);
  Result<Reply> handle(Session& session, const proto::StatusRequest& request);
  Result<Reply> handle(Session& session, const proto::ClientsRequest& request);
  Result<Reply> handle(Session& session, const proto::StatsRequest& request);
  Result<Reply> handle(Session& session, const proto::BackendsRequest& request);
  // region_handlers.cpp: tiers and pool regions.
  Result<Reply> handle(Session& session, const proto::TiersRequest& request);
  Result<Reply> handle(Session& session, const proto::RegionAlloc& request);
  Result<Reply> handle(Session& session, const proto::RegionFree& request);
  Result<Reply> handle(Session& session, const proto::RegionAlias& request);
  Result<Reply> handle(Session& session, const proto::NamedCreate& request);
  Result<Reply> handle(Session& session, const proto::NamedOpen& request);
  Result<Reply> handle(Session& session, const proto::NamedUnlink& request);
  Result<Reply> handle(Session& session, const proto::RegionsRequest& request);
  Result<Reply> handle(Session& session, const proto::RegionMigrate& request);
  Result<Reply> create_region(Session& session, const CreateSpec& spec);
  Result<Reply> region_reply(Session& session, Region& region, bool writable);
  // tiering/tiering_handlers.cpp
  Result<Reply> handle(Session& session, const proto::AccessRingOpen& request);
  Result<Reply> handle(Session& session, const proto::TieringStatusRequest& request);
  Result<Reply> handle(Session& session, const proto::TieringHot& request);
  Result<Reply> handle(Session& session, const proto::TieringSet& request);
  // kvstore/kv_handlers.cpp
  Result<Reply> handle(Session& session, const proto::KvOpen& request);
  Result<Reply> handle(Session& session, const proto::KvNamespaceOpen& request);
  Result<Reply> handle(Session& session, const proto::KvStatusRequest& request);
  Result<Reply> handle(Session& session, const proto::KvNamespacesRequest& request);
  Result<Reply> handle(Session& session, const proto::KvNamespaceDrop& request);
  Result<KvService*> kv_service();
  // weights/weights_handlers.cpp
  Result<Reply> handle(Session& session, const proto::WeightsLoad& request);
  Result<Reply> handle(Session& session, const proto::WeightsOpen& request);
  Result<Reply> handle(Session& session, const proto::WeightsUnload& request);
  Result<Reply> handle(Session& session, const proto::WeightsListRequest& request);
  // A load or open: its reply now, or deferred until the copy is done.
  Result<Reply> weights_reply(Result<WeightsAnswer> answer);
  // gpu/gpu_handlers.cpp
  Result<Reply> handle(Session& session, const proto::GpuHostAlloc& request);
  // devpool/devpool_handlers.cpp
  Result<Reply> handle(Session& session, const proto::DevRegister& request);
  Result<Reply> handle(Session& session, const proto::DevHeartbeat& request);
  Result<Reply> handle(Session& session, const proto::DevAttach& request);
  Result<Reply> handle(Session& session, const proto::DevDetach& request);
  Result<Reply> handle(Session& session, const proto::DevListRequest& request);
  Result<Reply> handle(Session& session, const proto::DevFailover& request);
  Result<DevpoolService*> devpool_service();
  // ckpt/ckpt_handlers.cpp
  Result<Reply> handle(Session& session, const proto::CkptCreate& request);
  Result<Reply> handle(Session& session, const proto::CkptRestore& request);
  Result<Reply> handle(Session& session, const proto::CkptListRequest& request);
  Result<Reply> handle(Session& session, const proto::CkptRemove& request);
  // Sends the deferred CkptCreate/CkptRestore replies of finished tasks.
  void finish_ckpt_tasks();
  // pod/pod_handlers.cpp
  Result<Reply> handle(Session& session, const proto::PodStatusRequest& request);
  // This daemon's record in the pod: its tiers and pooled devices.
  PodMember pod_self() const;
  void add_pod_counters(std::vector<proto::Counter>& out) const;

  // Keeps the store's SSD completion eventfd in epoll once the store runs.
  void watch_kv_io();
  // Serves the KV rings; true when there was work.
  bool poll_kv();
  // Polls the KV rings a bounded number of times until one has work.
  bool spin_kv_rings();
  Result<void> require_admin(Session& session, const char* what);
  void resolve_admin_groups();
  std::vector<proto::Counter> collect_counters() const;
  // The duration histograms under their internal names (metric_table.hpp).
  std::vector<HistogramSample> collect_histograms() const;
  std::string render_metrics() const;
  DurationHistogram& request_duration(std::string_view type);
  bool is_admin(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) const;
  // Why a new connection of `uid` is refused (max_clients, the admins'
  // reserve, max_clients_per_uid; counted), or nullopt to accept it.
  std::optional<std::string> connection_refusal(uid_t uid, bool admin);
  std::string status_line() const;

  Config config_;
  std::filesystem::path state_dir_;
  std::optional<std::filesystem::path> config_path_;
  std::filesystem::path socket_path_;
  SysfsRoot sysfs_{"/"};
  UniqueFd lock_fd_;
  UniqueFd listen_fd_;
  UniqueFd epoll_fd_;
  UniqueFd signal_fd_;
  UniqueFd tick_fd_;
  UniqueFd watchdog_fd_;
  std::unique_ptr<hal::PagePlacement> placement_;
  std::unique_ptr<RegionPool> pool_;
  std::unique_ptr<MigrationWorker> migrations_;
  uint32_t current_request_id_ = 0;
  // The descriptors that came with the request being dispatched.
  std::vector<UniqueFd> request_fds_;
  std::vector<hal::BackendReport> backends_;
  std::vector<gid_t> admin_gids_;
  // Before sessions_: a session's ring unregisters from it on destruction.
  std::unique_ptr<tiering::ClientReportSource> client_reports_ = std::make_unique<tiering::ClientReportSource>();
  std::map<uint64_t, std::unique_ptr<Session>> sessions_;
  std::unordered_map<uid_t, uint32_t> clients_per_uid_;  // open sessions per peer uid
  // The KV-cache store; null when disabled ([kvstore] enabled = false, or no
  // dram tier for it: kv_off_reason_ says which).
  std::unique_ptr<KvService> kv_;
  // Shared model weights (WeightsLoad/Open/Unload/List).
  std::unique_ptr<WeightsService> weights_;
  // Checkpoints (CkptCreate/Restore/List/Remove).
  std::unique_ptr<CkptService> ckpt_;
  // Pinned host-NUMA memory for CUDA arenas (GpuHostAlloc).
  GpuHostAllocator gpu_host_;
  // The embedded pod allocator and its pod file; null when [devpool] is off.
  std::unique_ptr<DevpoolService> devpool_;
  std::string devpool_off_reason_;
  UniqueFd devpool_timer_fd_;  // every telemetry period: the pod's leases are checked
  // The pod of hosts this daemon is a member of (embedded or etcd), and its
  // member name there.
  std::unique_ptr<PodMembership> pod_;
  std::string pod_host_;
  // The transfer engine and the KV store across the pod (etcd pods only).
  // They read the KV views: both go before kv_.
  std::unique_ptr<PodFabric> pod_fabric_;
  std::unique_ptr<PodKv> pod_kv_;
  std::string kv_off_reason_;
  int kv_io_fd_ = -1;      // the store's completion eventfd while it is in epoll
  int kv_commit_fd_ = -1;  // the store's commit eventfd while it is in epoll
  uint64_t next_session_id_ = 1;
  uint64_t started_ns_ = 0;
  bool stopping_ = false;
  bool move_all_ = false;
  DaemonCounters counters_;
  // Handling time per request type, and each region migration's duration.
  std::map<std::string, DurationHistogram, std::less<>> request_durations_;
  DurationHistogram migration_durations_;
  MetricsServer metrics_;
  // Last: it reads client_reports_ and the pool, so it goes first.
  std::unique_ptr<TieringService> tiering_;
};

}  // namespace cxlpool::daemon
