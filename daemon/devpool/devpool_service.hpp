// SPDX-License-Identifier: Apache-2.0
// The device pool: the allocator (lib/devpool) over the pod state (the
// daemon's memory, or etcd shared with the pod's other daemons), the pod
// file, and the bookkeeping that ties devices and attachments to the
// connections that made them.
//
// A backend's connection is its device's life: when it closes, the device
// is failed over at once; while it is open, the lease (renewed by each
// heartbeat) covers a backend that hangs. A frontend's attachments end with
// its connection. Every decision of the allocator is applied to the pod
// file in the same order: the slots of legs that changed device are
// formatted again, then the attachment's table line is rewritten (new
// generation), written back and fenced, so an engine that sees the new
// generation finds the new links in place.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../config.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/pod_allocator.hpp"
#include "cxlpool/proto/messages.hpp"
#include "etcd_pod_state.hpp"
#include "pod_file.hpp"

namespace cxlpool::daemon {

// Member, and its metric's name after "devpool.".
// clang-format off
#define CXLPOOL_DEVPOOL_COUNTERS(X)                                                                  \
  X(registrations,         "registrations")                                                          \
  X(registrations_refused, "registrations_refused") /* name taken, table full, per-uid limit */      \
  X(names_taken,           "names_taken")           /* of those: a live device of that host/name, here or through another daemon */ \
  X(heartbeats,            "heartbeats")                                                             \
  X(attaches,              "attaches")                                                               \
  X(attaches_refused,      "attaches_refused")      /* no device, table full, per-uid limit */       \
  X(detaches,              "detaches")                                                               \
  X(failovers,             "failovers_total")       /* attachments moved to their backup or a new primary */ \
  X(backups_replaced,      "backups_replaced")                                                       \
  X(stranded,              "stranded")              /* attachments left without any device */        \
  X(session_losses,        "session_losses")        /* devices whose backend's connection closed */  \
  X(lease_expiries,        "lease_expiries")                                                         \
  X(link_downs,            "link_downs")                                                             \
  X(admin_failovers,       "admin_failovers")                                                        \
  X(slots_formatted,       "slots_formatted")                                                        \
  X(table_writes,          "table_writes")
// clang-format on

struct DevpoolCounters {
  CXLPOOL_DEVPOOL_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_DEVPOOL_COUNTERS)
};

// Writes table lines with the line-access policy of the pod's coherence.
class PodTableSink {
 public:
  virtual ~PodTableSink() = default;
  virtual void write(uint32_t index, const devpool::AttachmentLine& line) = 0;
  virtual void write(uint32_t index, const devpool::DeviceLine& line) = 0;
};

class DevpoolService {
 public:
  // Creates the pod file (docs/configuration.md, [devpool]). With `etcd`
  // the allocator's state is the pod's, in etcd; without, this daemon's own.
  static Result<std::unique_ptr<DevpoolService>> create(const DevpoolSection& config,
                                                        const std::filesystem::path& state_dir,
                                                        std::unique_ptr<EtcdPodState> etcd = nullptr);
  // The limits a record of the shared state must fit ([devpool]).
  static DevpoolLimits limits(const DevpoolSection& config);

  const std::filesystem::path& pod_path() const { return pod_.path(); }
  // The pod file, sent (duplicated by the kernel) with register and attach replies.
  int pod_fd() const { return pod_.fd(); }
  std::string pod_description() const { return pod_.describe(); }
  std::string pod_placement_warning() const { return pod_.placement_warning(); }
  void remove_pod_name() const { pod_.remove_name(); }
  // How often leases are checked (the backends' heartbeat period).
  uint64_t telemetry_ns() const { return uint64_t{config_.telemetry_ms} * 1'000'000; }

  Result<proto::DevRegisterReply> register_device(uint64_t session, uid_t uid, bool admin,
                                                  const proto::DevRegister& request, uint64_t now_ns);
  Result<proto::DevHeartbeatReply> heartbeat(uint64_t session, const proto::DevHeartbeat& request, uint64_t now_ns);
  Result<proto::DevAttachReply> attach(uint64_t session, uid_t uid, bool admin, const proto::DevAttach& request,
                                       uint64_t now_ns);
  Result<void> detach(uint64_t session, uint32_t attachment);
  proto::DevListReply list(uint64_t now_ns) const;
  Result<proto::DevFailoverReply> failover(uint32_t device, uint64_t now_ns);

  // The connection closed: its devices fail over now, its attachments end.
  void close_session(uint64_t session, uint64_t now_ns);
  // Devices whose lease ran out by now are failed over (every telemetry
  // period); with the state in etcd, what other daemons changed is folded
  // in first (sync_pod).
  void check_leases(uint64_t now_ns);
  // With the state in etcd: takes in the pod's changes, fails over legs on
  // devices that left the pod, retries removals etcd could not take, and
  // brings the pod file's table in line with the pod.
  void sync_pod();

  void add_counters(std::vector<proto::Counter>& out) const;

 private:
  DevpoolService(const DevpoolSection& config, PodFile pod, std::unique_ptr<EtcdPodState> etcd);
  // Runs one decision of the allocator as a transaction of the state,
  // deciding again when another daemon's change came first.
  template <typename Decide>
  auto decide(Decide&& run) -> Result<decltype(run())>;
  bool deregister(uint32_t device, uint64_t now_ns);
  bool drop_attachment(uint32_t attachment);
  void fail_over_missing_devices();
  void mirror_table();
  // Formats the slots, rewrites the lines and counts what a decision did.
  void apply(const devpool::FailoverReport& report, const char* why);
  void format_slot(uint32_t slot, devpool::DeviceKind kind);
  void write_attachment(const devpool::Attachment& a);
  void free_attachment_line(const devpool::Attachment& a);
  void write_device(const devpool::Device& d);
  void free_device_line(uint32_t line, uint32_t device_id);
  void forget_device(uint32_t device);
  template <typename Reply>
  void fill_pod(Reply& reply) const;

  DevpoolSection config_;
  PodFile pod_;
  std::unique_ptr<PodTableSink> table_;
  std::unique_ptr<EtcdPodState> etcd_;  // null: the embedded state
  devpool::EmbeddedPodState embedded_;
  devpool::PodState& state_;
  devpool::PodAllocator allocator_;
  DevpoolCounters counters_;
  uint64_t table_version_ = 0;
  std::vector<uint32_t> device_line_generation_;
  // What each connection made, and what each uid holds.
  std::map<uint64_t, std::set<uint32_t>> session_devices_;
  std::map<uint64_t, std::set<uint32_t>> session_attachments_;
  std::map<uint32_t, uid_t> device_uid_;
  std::map<uint32_t, uid_t> attachment_uid_;
  std::map<uid_t, uint32_t> devices_per_uid_;
  std::map<uid_t, uint32_t> attachments_per_uid_;
  // Removals the state could not take yet (etcd unreachable): retried.
  std::set<uint32_t> pending_deregister_;
  std::set<uint32_t> pending_detach_;
  // The table lines as last written to the pod file, by line.
  std::map<uint32_t, devpool::Device> mirror_devices_;
  std::map<uint32_t, devpool::Attachment> mirror_attachments_;
};

}  // namespace cxlpool::daemon
