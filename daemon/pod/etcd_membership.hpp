// SPDX-License-Identifier: Apache-2.0
// Pod membership in etcd. Two threads:
//   - the session: grants a lease of lease_ttl_s, creates this daemon's
//     record under <prefix><host> bound to it (refused while another
//     lease holds the name), renews it every third of the TTL, writes the
//     record again when it changes, and registers anew when etcd says the
//     lease is gone (it expired while etcd was unreachable from here);
//   - the watcher: lists the prefix (reconciling the table: whatever is
//     missing departed), then watches it from the listing's revision; a
//     DELETE (a lease that expired, a clean stop) is a departure at once.
//     When the watch ends (etcd gone, silent for a TTL) it lists again.
// The event loop only reads snapshots.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "etcd_client.hpp"
#include "etcd_follower.hpp"
#include "etcd_health.hpp"
#include "pod_membership.hpp"

namespace cxlpool::daemon {

class EtcdPodMembership final : public PodMembership {
 public:
  EtcdPodMembership(const PodSection& config, PodMember self);
  ~EtcdPodMembership() override;

  PodSnapshot snapshot() const override;
  void update_self(const PodMember& self) override;
  void stop() override;

 private:
  void session_loop();
  void take_listing(EtcdRange&& listing);
  // One pass of the session: register, or renew and republish. False after an error.
  bool register_self();
  bool renew();
  void apply_events(const std::vector<EtcdEvent>& events);
  void note_changes(const PodMemberChanges& changes);
  void note_error(const Error& error, bool session);
  void note_success(bool session);
  // Waits up to `ms` unless stopping; false once stopping.
  bool pause(uint32_t ms);

  PodSection config_;
  std::string prefix_;
  std::string key_;
  EtcdClient client_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  PodMember self_;
  std::string published_;  // the record as last written; empty before registering
  uint64_t lease_ = 0;
  EtcdHealth health_;
  PodMemberTable table_;
  PodCounters counters_;

  bool listed_before_ = false;
  std::thread session_;
  std::unique_ptr<EtcdFollower> watcher_;
};

}  // namespace cxlpool::daemon
