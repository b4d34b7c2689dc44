// SPDX-License-Identifier: Apache-2.0
#include "etcd_membership.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "../logging.hpp"
#include "pod_auth.hpp"

namespace cxlpool::daemon {
namespace {

constexpr uint32_t kRetryMs = 250;  // after a failed etcd request

}  // namespace

EtcdPodMembership::EtcdPodMembership(const PodSection& config, PodMember self)
    : config_(config),
      prefix_(pod_members_prefix(config.name)),
      key_(prefix_ + self.host),
      client_(config.etcd_endpoints, std::chrono::milliseconds(config.etcd_timeout_ms)),
      self_(std::move(self)) {
  if (!config.etcd_user.empty()) {
    // Checked at start (check_config_on_host); a file gone since fails the authentication.
    client_.set_credentials(config.etcd_user, load_etcd_password(config.etcd_password_file, ::geteuid()).value_or(""));
  }
  std::string endpoints;
  for (const auto& e : config_.etcd_endpoints) endpoints += (endpoints.empty() ? "" : ",") + e;
  logger("pod")->info("pod '{}': member '{}' through etcd at {}", config_.name, self_.host, endpoints);
  session_ = std::thread([this] { session_loop(); });
  // A watch silent this long is replaced by a fresh listing.
  const auto idle_limit = std::chrono::milliseconds(std::max<uint32_t>(config_.lease_ttl_s, 2) * 1000);
  watcher_ = std::make_unique<EtcdFollower>(
      client_, prefix_, idle_limit,
      EtcdFollower::Handlers{[this](EtcdRange&& listing) { take_listing(std::move(listing)); },
                             [this](const std::vector<EtcdEvent>& events) { apply_events(events); },
                             [this](const Error& error) { note_error(error, false); }});
}

EtcdPodMembership::~EtcdPodMembership() { stop(); }

void EtcdPodMembership::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !session_.joinable() && !watcher_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.reset();
  if (session_.joinable()) session_.join();
  uint64_t lease = 0;
  {
    std::lock_guard lock(mutex_);
    lease = std::exchange(lease_, 0);
  }
  // Revoking the lease deletes the record: peers see the departure now
  // rather than a TTL later.
  if (lease != 0) {
    if (auto ok = client_.revoke(lease); !ok) {
      logger("pod")->warn("leaving the pod: lease {} not revoked ({}); peers drop it within {} s", lease,
                          ok.error().message, config_.lease_ttl_s);
    } else {
      logger("pod")->info("left pod '{}'", config_.name);
    }
  }
}

PodSnapshot EtcdPodMembership::snapshot() const {
  std::lock_guard lock(mutex_);
  PodSnapshot s;
  s.etcd = true;
  s.connected = health_.connected();
  s.lease_id = lease_;
  s.last_error = health_.last_error();
  s.members = table_.members();
  s.counters = counters_;
  return s;
}

void EtcdPodMembership::update_self(const PodMember& self) {
  std::lock_guard lock(mutex_);
  self_ = self;
}

bool EtcdPodMembership::pause(uint32_t ms) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping_; });
  return !stopping_;
}

void EtcdPodMembership::note_error(const Error& error, bool session) {
  std::lock_guard lock(mutex_);
  ++counters_.etcd_errors;
  if (health_.failed(session, error.message)) {
    logger("pod")->warn("etcd: {}; local work goes on, membership is reconciled when etcd answers", error.message);
  }
}

void EtcdPodMembership::note_success(bool session) {
  // Called with mutex_ held.
  if (health_.answered(session)) {
    logger("pod")->info("etcd answers again ({})", session ? "lease and record" : "member listing");
  }
}

void EtcdPodMembership::note_changes(const PodMemberChanges& changes) {
  // Called with mutex_ held.
  counters_.joins += changes.joined.size();
  counters_.departures += changes.departed.size();
  for (const auto& host : changes.joined) logger("pod")->info("member '{}' joined pod '{}'", host, config_.name);
  for (const auto& host : changes.departed) logger("pod")->info("member '{}' left pod '{}'", host, config_.name);
}

bool EtcdPodMembership::register_self() {
  std::string record;
  {
    std::lock_guard lock(mutex_);
    record = encode_pod_member(self_);
  }
  auto lease = client_.grant(config_.lease_ttl_s);
  if (!lease) {
    note_error(lease.error(), true);
    return false;
  }
  auto created = client_.create(key_, record, *lease);
  if (!created) {
    // The name is held by another lease (a second daemon with this name, or
    // this one's previous life whose lease has not expired yet): ours goes.
    (void)client_.revoke(*lease);
    note_error(created.error(), true);
    return false;
  }
  std::lock_guard lock(mutex_);
  lease_ = *lease;
  published_ = std::move(record);
  note_success(true);
  ++counters_.registrations;
  logger("pod")->info("registered in pod '{}' as '{}' (lease {:x}, ttl {} s)", config_.name, self_.host, lease_,
                      config_.lease_ttl_s);
  return true;
}

bool EtcdPodMembership::renew() {
  uint64_t lease = 0;
  std::string record;
  {
    std::lock_guard lock(mutex_);
    lease = lease_;
    record = encode_pod_member(self_);
    if (record == published_) record.clear();
  }
  auto ttl = client_.keepalive(lease);
  if (!ttl) {
    note_error(ttl.error(), true);
    return false;
  }
  if (*ttl <= 0) {
    // The lease expired while we could not reach etcd: our record went
    // with it and peers counted a departure. Register again.
    std::lock_guard lock(mutex_);
    logger("pod")->warn("lease {:x} expired; registering again", lease_);
    lease_ = 0;
    published_.clear();
    health_.session_lost();
    return true;
  }
  if (!record.empty()) {
    if (auto ok = client_.put(key_, record, lease); !ok) {
      note_error(ok.error(), true);
      return false;
    }
  }
  std::lock_guard lock(mutex_);
  ++counters_.keepalives;
  note_success(true);
  if (!record.empty()) published_ = std::move(record);
  return true;
}

void EtcdPodMembership::session_loop() {
  // Renewing at a third of the TTL leaves two tries before the lease runs out.
  const uint32_t period_ms = std::max<uint32_t>(config_.lease_ttl_s * 1000 / 3, 100);
  for (;;) {
    bool have_lease;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      have_lease = lease_ != 0;
    }
    const bool ok = have_lease ? renew() : register_self();
    bool still_have_lease;
    {
      std::lock_guard lock(mutex_);
      still_have_lease = lease_ != 0;
    }
    // Right after a lease went, register at once; after an error retry soon.
    const uint32_t wait_ms = !ok ? std::min(kRetryMs, period_ms) : still_have_lease ? period_ms : 0;
    if (!pause(wait_ms)) return;
  }
}

void EtcdPodMembership::apply_events(const std::vector<EtcdEvent>& events) {
  std::lock_guard lock(mutex_);
  for (const EtcdEvent& e : events) {
    if (!e.kv.key.starts_with(prefix_)) continue;
    const std::string host = e.kv.key.substr(prefix_.size());
    if (e.deleted) {
      note_changes(table_.erase(host));
      continue;
    }
    auto member = valid_pod_name(host) ? decode_pod_member(e.kv.value, host)
                                       : Result<PodMember>(fail(EINVAL, "not a member name"));
    if (!member) {
      ++counters_.records_refused;
      logger("pod")->warn("record of '{}' refused: {}", host, member.error().message);
      continue;
    }
    member->lease_id = e.kv.lease;
    member->create_revision = e.kv.create_revision;
    note_changes(table_.put(std::move(*member)));
  }
}

void EtcdPodMembership::take_listing(EtcdRange&& listing) {
  // The listing replaces the table: whatever is missing departed.
  std::lock_guard lock(mutex_);
  std::vector<PodMember> members;
  for (const EtcdKeyValue& kv : listing.kvs) {
    const std::string host = kv.key.substr(prefix_.size());
    auto member = valid_pod_name(host) ? decode_pod_member(kv.value, host)
                                       : Result<PodMember>(fail(EINVAL, "not a member name"));
    if (!member) {
      ++counters_.records_refused;
      continue;
    }
    member->lease_id = kv.lease;
    member->create_revision = kv.create_revision;
    members.push_back(std::move(*member));
  }
  note_changes(table_.replace(std::move(members)));
  if (listed_before_) ++counters_.resyncs;
  listed_before_ = true;
  note_success(false);
}

std::unique_ptr<PodMembership> open_pod_membership(const PodSection& config, PodMember self) {
  if (config.state == PodStateKind::kEtcd) return std::make_unique<EtcdPodMembership>(config, std::move(self));
  return std::make_unique<EmbeddedPodMembership>(std::move(self));
}

PodSnapshot EmbeddedPodMembership::snapshot() const {
  PodSnapshot s;
  s.members = {self_};
  return s;
}

}  // namespace cxlpool::daemon
