// SPDX-License-Identifier: Apache-2.0
// The daemon's side of pod membership: the record it publishes about
// itself, `cxlpoolctl pod status`, and the pod.* metrics. Anyone who may
// connect may read the pod's status: it holds what every member publishes
// to the whole pod anyway.
#include <unistd.h>

#include <climits>

#include "../daemon.hpp"
#include "cxlpool/common/clock.hpp"

namespace cxlpool::daemon {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

std::string pod_host_name(const PodSection& config) {
  if (!config.host.empty()) return config.host;
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !valid_pod_name(name)) return "localhost";
  return name;
}

PodMember Daemon::pod_self() const {
  PodMember self;
  self.host = pod_host_;
  self.provider = config_.pod.provider;
  self.address = config_.pod.address;
  for (const auto& t : pool_->tiers()) {
    self.tiers.push_back({t.name, tier_kind_name(t.kind), t.capacity});
    self.exported_bytes += t.capacity;
  }
  if (devpool_) {
    for (const auto& d : devpool_->list(monotonic_ns()).devices) self.devices.push_back(d.host + "/" + d.name);
  }
  // Peers ask for the card itself when it is too large for the record (or
  // lists a region they do not know yet).
  if (pod_fabric_) {
    std::string card = pod_fabric_->card();
    if (card.size() <= kMaxPodRecordCard) self.card = std::move(card);
  }
  return self;
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::PodStatusRequest&) {
  const PodSnapshot s = pod_->snapshot();
  proto::PodStatusReply reply;
  reply.backend = s.etcd ? proto::PodBackend::kEtcd : proto::PodBackend::kEmbedded;
  reply.connected = s.connected ? 1 : 0;
  reply.lease_ttl_s = s.etcd ? config_.pod.lease_ttl_s : 0;
  reply.lease_id = s.lease_id;
  reply.joins = s.counters.joins;
  reply.departures = s.counters.departures;
  reply.etcd_errors = s.counters.etcd_errors;
  reply.pod = config_.pod.name;
  reply.host = pod_host_;
  reply.endpoints = s.etcd ? joined(config_.pod.etcd_endpoints) : std::string();
  reply.last_error = s.last_error.substr(0, proto::kMaxStringLength);
  for (const PodMember& m : s.members) {
    if (reply.members.size() == proto::kMaxListEntries) break;
    std::vector<std::string> tiers;
    for (const auto& t : m.tiers) tiers.push_back(t.name + ":" + t.kind + ":" + std::to_string(t.capacity));
    reply.members.push_back({.lease_id = m.lease_id,
                             .exported_bytes = m.exported_bytes,
                             .revision = m.create_revision,
                             .self = m.host == pod_host_ && m.lease_id == s.lease_id ? uint8_t{1} : uint8_t{0},
                             .host = m.host,
                             .provider = m.provider,
                             .address = m.address,
                             .tiers = joined(tiers).substr(0, proto::kMaxStringLength),
                             .devices = joined(m.devices).substr(0, proto::kMaxStringLength)});
  }
  if (pod_fabric_) {
    pod_fabric_->fill_status(reply);
    if (reply.fabric_error.empty() && pod_kv_ && !pod_kv_->serve_error().empty()) {
      reply.fabric_error = pod_kv_->serve_error().substr(0, proto::kMaxStringLength);
    }
  }
  if (pod_kv_) {
    const PodKvCounters c = pod_kv_->counters();
    reply.kv_remote_gets = c.gets;
    reply.kv_remote_hits = c.hits;
    reply.kv_remote_misses = c.misses;
    reply.kv_remote_bytes = c.bytes;
    reply.kv_remote_errors = c.errors;
    reply.kv_pins_served = c.pins_served;
    const PodKvReplicaCounters r = pod_kv_->replica_counters();
    reply.kv_replications_sent = r.sent;
    reply.kv_replicated_chunks = r.chunks;
    reply.kv_replication_errors = r.errors;
    reply.kv_replication_dropped = r.dropped;
  }
  return Reply{reply, {}};
}

void Daemon::add_pod_counters(std::vector<proto::Counter>& out) const {
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  const PodSnapshot s = pod_->snapshot();
  add("pod.etcd", s.etcd ? 1 : 0);
  add("pod.connected", s.connected ? 1 : 0);
  add("pod.members", s.members.size());
  emit_counters("pod.", s.counters, add);
  if (pod_fabric_) {
    pod_fabric_->add_counters(add);
  } else {
    PodFabric::add_closed_counters(add);
  }
  emit_counters("pod.kv.", pod_kv_ ? pod_kv_->counters() : PodKvCounters{}, add);
  emit_counters("pod.kv.", pod_kv_ ? pod_kv_->probe_counters() : PodKvProbeCounters{}, add);
  emit_counters("pod.kv.", pod_kv_ ? pod_kv_->replica_counters() : PodKvReplicaCounters{}, add);
}

}  // namespace cxlpool::daemon
