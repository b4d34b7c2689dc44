// SPDX-License-Identifier: Apache-2.0
// The session's Hello and the requests about the daemon itself: status,
// clients, counters and backends.
#include <unistd.h>

#include <algorithm>

#include "cxlpool/common/clock.hpp"
#include "daemon.hpp"

namespace cxlpool::daemon {

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::Hello& request) {
  if (session.greeted) return fail(EPROTO, "Hello sent twice");
  const uint16_t lo = std::max(request.min_version, proto::kVersionMin);
  const uint16_t hi = std::min(request.max_version, proto::kVersionMax);
  if (lo > hi) {
    return fail(EPROTONOSUPPORT, "no common protocol version: client speaks " +
                                     std::to_string(request.min_version) + ".." +
                                     std::to_string(request.max_version) + ", daemon " +
                                     std::to_string(proto::kVersionMin) + ".." + std::to_string(proto::kVersionMax));
  }
  session.greeted = true;
  session.version = hi;
  session.name = request.client_name;
  proto::HelloReply reply;
  reply.version = hi;
  reply.daemon_version = CXLPOOL_VERSION_STRING;
  reply.client_id = session.id;
  reply.max_regions = config_.max_regions_per_client;
  return Reply{reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::StatusRequest&) {
  proto::StatusReply s;
  s.daemon_version = CXLPOOL_VERSION_STRING;
  s.pid = static_cast<uint32_t>(::getpid());
  s.uptime_ns = monotonic_ns() - started_ns_;
  s.clients = static_cast<uint32_t>(sessions_.size());
  s.regions = static_cast<uint32_t>(pool_->regions().size());
  s.bytes_allocated = pool_->bytes_allocated();
  s.state_dir = state_dir_.string();
  s.config_source = config_.source;
  return Reply{s, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::ClientsRequest&) {
  if (auto ok = require_admin(session, "listing clients"); !ok) return tl::unexpected(ok.error());
  proto::ClientsReply reply;
  const uint64_t now = monotonic_ns();
  for (const auto& [id, s] : sessions_) {
    if (reply.clients.size() == proto::kMaxListEntries) break;
    proto::ClientEntry e;
    e.id = id;
    e.pid = static_cast<uint32_t>(s->pid);
    e.uid = s->who.uid;
    e.gid = s->who.gid;
    e.name = s->name;
    e.regions = s->handle_count;
    for (const auto& [region_id, count] : s->handles) {
      if (const Region* r = pool_->find(region_id)) e.bytes += r->size;
    }
    e.connected_ns = now - s->connected_ns;
    reply.clients.push_back(std::move(e));
  }
  return Reply{reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::StatsRequest&) {
  proto::StatsReply reply;
  reply.counters = collect_counters();
  if (reply.counters.size() > proto::kMaxListEntries) reply.counters.resize(proto::kMaxListEntries);
  return Reply{reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::BackendsRequest&) {
  proto::BackendsReply reply;
  for (const auto& b : backends_) {
    reply.backends.push_back(
        {b.cls, b.name, static_cast<proto::BackendState>(b.state), b.detail.substr(0, proto::kMaxStringLength)});
  }
  return Reply{reply, {}};
}

std::vector<proto::Counter> Daemon::collect_counters() const {
  std::vector<proto::Counter> out;
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  add("daemon.uptime_seconds", (monotonic_ns() - started_ns_) / 1000000000ull);
  add("daemon.reloads", counters_.reloads);
  add("clients.connected", sessions_.size());
  counters_.visit(add);
  for (const auto& [type, count] : counters_.by_type) add("control.requests_" + type, count);
  add("pool.regions", pool_->regions().size());
  add("pool.allocated_bytes", pool_->bytes_allocated());
  emit_counters("pool.", pool_->counters(), add);
  const auto cr = client_reports_->counters();
  add("tiering.client.accesses", cr.accesses);
  add("tiering.client.dropped", client_reports_->dropped_total());
  add("tiering.client.rejected", cr.rejected);
  add("tiering.client.rings", cr.rings);
  add("tiering.client.broken_rings", cr.broken_rings);
  tiering_->append_counters(out);
  add("kv.enabled", kv_ ? 1 : 0);
  if (kv_) kv_->append_counters(out);
  if (weights_) weights_->add_counters(out);
  if (ckpt_) ckpt_->add_counters(out);
  gpu_host_.add_counters(out);
  add("devpool.enabled", devpool_ ? 1 : 0);
  if (devpool_) devpool_->add_counters(out);
  if (pod_) add_pod_counters(out);
  for (const auto& tier : pool_->tiers()) {
    const std::string prefix = "tier." + tier.name + ".";
    add(prefix + "capacity_bytes", tier.capacity);
    add(prefix + "used_bytes", tier.used);
    add(prefix + "free_bytes", tier_free_bytes(tier, pool_->topology()));
  }
  return out;
}

std::vector<HistogramSample> Daemon::collect_histograms() const {
  std::vector<HistogramSample> out;
  for (const auto& [type, histogram] : request_durations_) {
    out.push_back({"control.request_duration." + type, &histogram});
  }
  out.push_back({"pool.migration_duration", &migration_durations_});
  if (kv_) kv_->append_histograms(out);
  return out;
}

std::string Daemon::render_metrics() const { return render_prometheus(collect_counters(), collect_histograms()); }

DurationHistogram& Daemon::request_duration(std::string_view type) {
  auto it = request_durations_.find(type);
  if (it == request_durations_.end()) it = request_durations_.emplace(std::string(type), DurationHistogram{}).first;
  return it->second;
}

}  // namespace cxlpool::daemon
