// SPDX-License-Identifier: Apache-2.0
// The device pool's state in etcd ([pod] state = "etcd"; docs/devpool.md,
// "State in etcd"): every daemon of the pod runs the allocator for its own
// backends and frontends over one shared view of the pod's devices and
// attachments. The view is a cache of the keys under
// /cxlpool/pods/<pod>/devpool/ kept by a watch; each decision of the
// allocator is one etcd transaction that compares the mod revision of every
// record it rewrites (and that the line keys it creates are absent), so two
// daemons deciding at once never both win: the loser reads the pod again and
// decides again.
//
// Threads: the event loop reads and changes the view and commits; a session
// thread holds this daemon's lease (its records live by it, so a daemon that
// dies takes its devices and attachments with it); a watch thread lists and
// watches the prefix and queues what it sees for the event loop, which folds
// it in with refresh(). While etcd is unreachable decisions fail at once
// (no request waits for a timeout) and everything else goes on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "../pod/etcd_client.hpp"
#include "../pod/etcd_follower.hpp"
#include "../pod/etcd_health.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/devpool/pod_state.hpp"
#include "devpool_records.hpp"

namespace cxlpool::daemon {

// Member, and its metric's name after "devpool.state_".
// clang-format off
#define CXLPOOL_DEVPOOL_STATE_COUNTERS(X)                                                          \
  X(etcd_errors,      "etcd_errors")      /* failed etcd requests and lost watches */             \
  X(records_refused,  "records_refused")  /* records under the prefix that failed validation */   \
  X(commits,          "commits")          /* decisions written to etcd */                         \
  X(conflicts,        "conflicts")        /* commits another daemon's change beat: decided again */ \
  X(resyncs,          "resyncs")          /* full listings after a conflict or a lost watch */     \
  X(republished,      "republished")      /* own records written again after they went */      \
  X(load_writes,      "load_writes")      /* device records rewritten to share their load */
// clang-format on

struct DevpoolStateCounters {
  CXLPOOL_DEVPOOL_STATE_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_DEVPOOL_STATE_COUNTERS)
};

struct DevpoolStateStatus {
  bool connected = false;  // the lease is held and the watch is running
  uint64_t lease_id = 0;
  std::string last_error;
  DevpoolStateCounters counters;
};

class EtcdPodState final : public devpool::PodState {
 public:
  // `member` is this daemon's name in the pod ([pod] host).
  EtcdPodState(const PodSection& pod, std::string member, const DevpoolLimits& limits);
  ~EtcdPodState() override;
  EtcdPodState(const EtcdPodState&) = delete;
  EtcdPodState& operator=(const EtcdPodState&) = delete;

  std::optional<devpool::Device> device(uint32_t id) const override;
  std::vector<devpool::Device> devices() const override;
  void put_device(const devpool::Device& device) override;
  void erase_device(uint32_t id) override;
  std::optional<devpool::Attachment> attachment(uint32_t id) const override;
  std::vector<devpool::Attachment> attachments() const override;
  void put_attachment(const devpool::Attachment& attachment) override;
  void erase_attachment(uint32_t id) override;
  // Hosts of the records in the view plus those this daemon noted.
  std::vector<devpool::Host> hosts() const override;
  void put_host(const devpool::Host& host) override { hosts_[host.name] = host; }
  // Leases are this daemon's: only its own backends' heartbeats renew them
  // (their clocks are this host's monotonic clock), so they stay local.
  std::optional<devpool::Lease> lease(uint32_t device) const override;
  std::vector<devpool::Lease> leases() const override;
  void put_lease(const devpool::Lease& lease) override { leases_[lease.device] = lease; }
  void erase_lease(uint32_t device) override { leases_.erase(device); }
  uint32_t next_id() override;

  void begin() override;
  // EAGAIN on a conflict (the view is listed again before it returns),
  // EHOSTUNREACH when etcd is not reachable or no lease is held yet.
  Result<void> commit() override;
  void rollback() override;

  // Folds in what the watch saw since the last call and writes this
  // daemon's own records again where they went missing (a lease that
  // expired while etcd was away). True when the view changed.
  bool refresh();
  // The member a device or attachment in the view belongs to; "" if none.
  std::string device_member(uint32_t id) const;
  std::string attachment_member(uint32_t id) const;
  const std::string& member() const { return member_; }
  // A heartbeat's decision wrote its device's load to etcd.
  void note_load_written() { ++view_counters_.load_writes; }

  DevpoolStateStatus status() const;
  // Waits up to `timeout` until the lease is held and the pod listed, so
  // that backends registering right after the daemon started are not
  // refused; false when etcd did not answer in time (the daemon goes on).
  bool wait_connected(std::chrono::milliseconds timeout);
  // Ends the threads and revokes the lease: peers drop this daemon's
  // records at once. Called by the destructor.
  void stop();

 private:
  template <typename T>
  struct Entry {
    T record;
    std::string member;
    uint64_t lease = 0;
    uint64_t mod_revision = 0;
  };
  // What the watch thread hands over: a full listing, or events.
  struct Listing {
    EtcdRange range;
  };
  using Incoming = std::variant<Listing, std::vector<EtcdEvent>>;
  // Everything begin() saves and rollback() restores.
  struct Saved {
    std::map<uint32_t, Entry<devpool::Device>> devices;
    std::map<uint32_t, Entry<devpool::Attachment>> attachments;
    std::map<std::string, devpool::Host> hosts;
    std::map<uint32_t, devpool::Lease> leases;
    uint32_t next_id = 1;
    bool next_id_taken = false;
  };

  void session_loop();
  bool pause(uint32_t ms);
  void note_error(const Error& error, bool session);
  void note_success(bool session);

  void apply_listing(const EtcdRange& range);
  void apply_event(const EtcdEvent& event);
  // Puts or removes one key's record in the view; false when refused.
  bool apply_kv(const EtcdKeyValue& kv, bool deleted);
  Result<void> resync();
  void republish();
  // Why this daemon's record `value` at `key` cannot be written again:
  // another daemon's record holds its line, or (a device) a live device
  // of its host/name; "" when nothing does.
  std::string held_elsewhere(const DevpoolKey& key, const std::string& value) const;
  uint64_t current_lease() const;
  bool connected() const;

  std::string key_of_device(uint32_t line) const;
  std::string key_of_attachment(uint32_t line) const;

  PodSection pod_;
  std::string member_;
  std::string prefix_;
  DevpoolLimits limits_;
  EtcdClient client_;

  // The view: event loop only.
  std::map<uint32_t, Entry<devpool::Device>> devices_;          // by id
  std::map<uint32_t, Entry<devpool::Attachment>> attachments_;  // by id
  std::map<std::string, devpool::Host> hosts_;
  std::map<uint32_t, devpool::Lease> leases_;
  uint32_t next_id_ = 1;
  uint64_t next_id_revision_ = 0;  // mod revision of the next_id key; 0: absent
  bool next_id_taken_ = false;     // this transaction took an id
  // The revision each key was last seen at (puts and deletes), so that a
  // queued event older than what a commit or listing showed is ignored.
  std::map<std::string, uint64_t> key_revision_;
  uint64_t listing_revision_ = 0;
  // This daemon's own records as it last wrote them: what it writes again
  // when they went missing.
  std::map<std::string, std::string> own_;
  std::optional<Saved> saved_;
  DevpoolStateCounters view_counters_;
  std::set<std::string> refused_logged_;

  // Shared with the threads, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t lease_ = 0;
  EtcdHealth health_;
  std::vector<Incoming> incoming_;
  DevpoolStateCounters thread_counters_;

  bool listed_before_ = false;
  std::thread session_;
  std::unique_ptr<EtcdFollower> watcher_;
};

}  // namespace cxlpool::daemon
