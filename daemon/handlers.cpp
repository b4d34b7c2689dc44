// SPDX-License-Identifier: Apache-2.0
// Request handling: one function per request type, each validating what the
// codec cannot know (ids, permissions, limits) before touching the pool.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "cxlpool/common/clock.hpp"
#include "daemon.hpp"
#include "logging.hpp"

namespace cxlpool::daemon {

Result<void> Daemon::require_admin(Session& session, const char* what) {
  if (session.who.admin) return {};
  return fail(EPERM, std::string(what) + " requires root or membership in an admin group (uid " +
                         std::to_string(session.who.uid) + ")");
}

Result<Daemon::Reply> Daemon::on_hello(Session& session, const proto::Hello& hello) {
  if (session.greeted) return fail(EPROTO, "Hello sent twice");
  const uint16_t lo = std::max(hello.min_version, proto::kVersionMin);
  const uint16_t hi = std::min(hello.max_version, proto::kVersionMax);
  if (lo > hi) {
    return fail(EPROTONOSUPPORT, "no common protocol version: client speaks " +
                                     std::to_string(hello.min_version) + ".." + std::to_string(hello.max_version) +
                                     ", daemon " + std::to_string(proto::kVersionMin) + ".." +
                                     std::to_string(proto::kVersionMax));
  }
  session.greeted = true;
  session.version = hi;
  session.name = hello.client_name;
  proto::HelloReply reply;
  reply.version = hi;
  reply.daemon_version = CXLPOOL_VERSION_STRING;
  reply.client_id = session.id;
  reply.max_regions = config_.max_regions_per_client;
  return Reply{reply, {}};
}

Result<Daemon::Reply> Daemon::region_reply(Session& session, Region& region, bool writable) {
  // SCM_RIGHTS gives the client its own reference to the file, so a
  // writable handle can carry the region's descriptor itself.
  UniqueFd read_only;
  if (!writable) {
    auto fd = pool_->read_only_fd(region);
    if (!fd) {
      pool_->release_handle(region.id);
      return tl::unexpected(fd.error());
    }
    read_only = std::move(*fd);
  }
  ++session.handles[region.id];
  ++session.handle_count;
  proto::RegionReply reply;
  reply.region_id = region.id;
  reply.tier_id = region.tier_id;
  reply.size = region.size;
  reply.page_size = region.page_size;
  reply.flags = (writable ? proto::kRegionWritable : 0) | (region.hugetlb ? proto::kRegionHugetlb : 0);
  reply.name = region.name;
  return Reply{reply, std::move(read_only), writable ? region.fd.get() : -1};
}

Result<Daemon::Reply> Daemon::on_create(Session& session, const CreateSpec& spec) {
  if (session.handle_count >= config_.max_regions_per_client) {
    return fail(EMFILE, "client holds " + std::to_string(session.handle_count) +
                            " regions (max_regions_per_client)");
  }
  auto region = pool_->create(spec, session.who);
  if (!region) return tl::unexpected(region.error());
  logger("pool")->debug("client {} created region {} ({} bytes on tier {})", session.id, (*region)->id,
                        (*region)->size, (*region)->tier_id);
  return region_reply(session, **region, true);
}

Result<Daemon::Reply> Daemon::on_access_ring_open(Session& session, const proto::AccessRingOpen& request) {
  if (session.access_ring) return fail(EBUSY, "this connection has an access ring already");
  const uint32_t entries = request.entries != 0 ? request.entries : proto::kAccessRingDefaultEntries;
  auto memory = proto::AccessRingMemory::create(entries);
  if (!memory) return tl::unexpected(memory.error());
  auto ring = std::make_unique<SessionAccessRing>();
  ring->memory = std::move(*memory);
  // Entries are checked against what the session holds when they are
  // drained, not when they were written: a region freed since then is gone.
  auto holds = [this](uint64_t session_id, uint64_t region_id) -> std::optional<uint64_t> {
    auto s = sessions_.find(session_id);
    if (s == sessions_.end() || !s->second->handles.contains(region_id)) return std::nullopt;
    const Region* region = pool_->find(region_id);
    return region != nullptr ? std::optional<uint64_t>(region->size) : std::nullopt;
  };
  if (auto ok = client_reports_->add_ring(session.id, ring->memory.bytes(), holds); !ok) {
    return tl::unexpected(ok.error());
  }
  ring->source = client_reports_.get();
  ring->session_id = session.id;
  proto::AccessRingReply reply;
  reply.entries = entries;
  reply.entry_size = sizeof(proto::AccessRingEntry);
  reply.ring_bytes = proto::access_ring_bytes(entries);
  // The daemon keeps its mapping only; the client gets the descriptor.
  UniqueFd fd = ring->memory.take_fd();
  session.access_ring = std::move(ring);
  logger("tiering")->debug("client {} opened an access ring of {} entries", session.id, entries);
  return Reply{reply, std::move(fd)};
}

Result<Daemon::Reply> Daemon::on_migrate(Session& session, const proto::RegionMigrate& request) {
  if (auto ok = require_admin(session, "region migrate"); !ok) return tl::unexpected(ok.error());
  auto job = pool_->begin_migration(request.region_id, request.target_tier, move_all_);
  if (!job) return tl::unexpected(job.error());
  if (job->node < 0 || job->from_tier == job->to_tier) {
    // Nothing to move (same tier, or no placement backend): answer now.
    Result<hal::MoveStats> moved = job->run(nullptr);
    return Reply{pool_->finish_migration(*job, moved), {}};
  }
  migrations_->submit(MigrationTask{*job, session.id, current_request_id_});
  Reply reply{proto::Ok{}, {}};
  reply.deferred = true;
  return reply;
}

Result<Daemon::Reply> Daemon::dispatch(Session& session, const proto::Message& message) {
  const auto type = proto::message_type(message);
  if (!proto::is_request(type)) {
    return fail(EPROTO, std::string("clients may not send ") + proto::message_type_name(type));
  }
  if (!session.greeted && type != proto::MsgType::kHello) {
    return fail(EPROTO, "the first message must be Hello");
  }
  return std::visit(
      [&](const auto& m) -> Result<Reply> {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, proto::Hello>) {
          return on_hello(session, m);
        } else if constexpr (std::is_same_v<T, proto::StatusRequest>) {
          return Reply{status(), {}};
        } else if constexpr (std::is_same_v<T, proto::TiersRequest>) {
          proto::TiersReply reply;
          for (const auto& tier : pool_->tiers()) reply.tiers.push_back(describe_tier(tier, pool_->topology()));
          return Reply{reply, {}};
        } else if constexpr (std::is_same_v<T, proto::RegionAlloc>) {
          CreateSpec spec{m.tier_id, m.size, m.flags, proto::RegionKind::kLeased, {}, 0600};
          return on_create(session, spec);
        } else if constexpr (std::is_same_v<T, proto::NamedCreate>) {
          // A client squatting an arena's name would keep the store from starting.
          if (m.name.rfind(kKvReservedPrefix, 0) == 0) {
            return fail(EPERM, "region names starting with '" + std::string(kKvReservedPrefix) +
                                   "' are reserved for the daemon's KV store");
          }
          if (m.name.rfind(kWeightsRegionPrefix, 0) == 0) {
            return fail(EPERM, "region names starting with '" + std::string(kWeightsRegionPrefix) +
                                   "' are reserved for the daemon's shared weights");
          }
          CreateSpec spec{m.tier_id, m.size, m.flags, proto::RegionKind::kNamed, m.name, m.mode};
          return on_create(session, spec);
        } else if constexpr (std::is_same_v<T, proto::NamedOpen>) {
          if (session.handle_count >= config_.max_regions_per_client) {
            return fail(EMFILE, "client holds too many regions (max_regions_per_client)");
          }
          const bool writable = (m.flags & proto::kOpenWritable) != 0;
          // A client that passed descriptors of a shared model's files may
          // map its region whatever the mode (WeightsService::proved_access).
          const bool proved = weights_ && weights_->proved_access(session.id, m.name);
          auto region = pool_->open_named(m.name, writable, session.who, proved);
          if (!region) return tl::unexpected(region.error());
          return region_reply(session, **region, writable);
        } else if constexpr (std::is_same_v<T, proto::NamedUnlink>) {
          if (auto ok = pool_->unlink_named(m.name, session.who); !ok) return tl::unexpected(ok.error());
          return Reply{proto::Ok{}, {}};
        } else if constexpr (std::is_same_v<T, proto::RegionFree>) {
          auto it = session.handles.find(m.region_id);
          if (it == session.handles.end()) {
            return fail(ENOENT, "this client holds no handle to region " + std::to_string(m.region_id));
          }
          if (--it->second == 0) session.handles.erase(it);
          --session.handle_count;
          pool_->release_handle(m.region_id);
          return Reply{proto::Ok{}, {}};
        } else if constexpr (std::is_same_v<T, proto::RegionsRequest>) {
          proto::RegionsReply reply;
          for (const auto& [id, region] : pool_->regions()) {
            if (!session.who.admin && region->owner_uid != session.who.uid) continue;
            if (reply.regions.size() == proto::kMaxListEntries) break;
            proto::RegionEntry e;
            e.id = id;
            e.kind = region->kind;
            e.name = region->name;
            e.tier_id = region->tier_id;
            e.size = region->size;
            e.owner_uid = region->owner_uid;
            e.mode = region->mode;
            e.client_id = region->lease_client;
            e.handles = region->handles;
            struct stat st {};
            if (::fstat(region->fd.get(), &st) == 0) e.resident_bytes = static_cast<uint64_t>(st.st_blocks) * 512;
            reply.regions.push_back(std::move(e));
          }
          return Reply{reply, {}};
        } else if constexpr (std::is_same_v<T, proto::RegionMigrate>) {
          return on_migrate(session, m);
        } else if constexpr (std::is_same_v<T, proto::AccessRingOpen>) {
          return on_access_ring_open(session, m);
        } else if constexpr (std::is_same_v<T, proto::TieringStatusRequest>) {
          return Reply{tiering_->status(), {}};
        } else if constexpr (std::is_same_v<T, proto::TieringHot>) {
          return Reply{tiering_->hot(m.top), {}};
        } else if constexpr (std::is_same_v<T, proto::TieringSet>) {
          if (auto ok = require_admin(session, "tiering set"); !ok) return tl::unexpected(ok.error());
          auto reply = tiering_->set(m.key, m.value);
          if (!reply) return tl::unexpected(reply.error());
          return Reply{*reply, {}};
        } else if constexpr (std::is_same_v<T, proto::KvOpen>) {
          return on_kv_open(session, m);
        } else if constexpr (std::is_same_v<T, proto::KvNamespaceOpen>) {
          auto kv = kv_service();
          if (!kv) return tl::unexpected(kv.error());
          auto opened = (*kv)->open_namespace(session.id, session.who, m);
          watch_kv_io();
          if (!opened) return tl::unexpected(opened.error());
          // The namespace's views, read-only, when the reply grants reading.
          Reply reply{opened->reply, {}};
          for (auto& fd : opened->views) reply.more_fds.push_back(std::move(fd));
          return reply;
        } else if constexpr (std::is_same_v<T, proto::KvStatusRequest>) {
          return Reply{kv_status(), {}};
        } else if constexpr (std::is_same_v<T, proto::KvNamespacesRequest>) {
          auto kv = kv_service();
          if (!kv) return Reply{proto::KvNamespacesReply{}, {}};
          auto reply = (*kv)->namespaces(session.who);
          watch_kv_io();
          if (!reply) return tl::unexpected(reply.error());
          return Reply{std::move(*reply), {}};
        } else if constexpr (std::is_same_v<T, proto::KvNamespaceDrop>) {
          // The namespace's owner or an admin (checked by the service).
          auto kv = kv_service();
          if (!kv) return tl::unexpected(kv.error());
          auto reply = (*kv)->drop_namespace(session.who, m.namespace_id);
          watch_kv_io();
          if (!reply) return tl::unexpected(reply.error());
          return Reply{*reply, {}};
        } else if constexpr (std::is_same_v<T, proto::WeightsLoad> || std::is_same_v<T, proto::WeightsOpen>) {
          // A copy under way answers later (finish_weight_loads).
          const WeightsWaiter waiter{session.id, current_request_id_};
          Result<WeightsAnswer> answer;
          if constexpr (std::is_same_v<T, proto::WeightsLoad>) {
            // The client's own descriptors of the files: the daemon opens no path.
            answer = weights_->load(m, std::move(request_fds_), session.who, waiter);
          } else {
            answer = weights_->open(m.model, session.who, waiter);
          }
          if (!answer) return tl::unexpected(answer.error());
          if (!answer->has_value()) {
            Reply reply;
            reply.deferred = true;
            return reply;
          }
          return Reply{**answer, {}};
        } else if constexpr (std::is_same_v<T, proto::WeightsUnload>) {
          auto reply = weights_->unload(m.model, session.who);
          if (!reply) return tl::unexpected(reply.error());
          return Reply{*reply, {}};
        } else if constexpr (std::is_same_v<T, proto::WeightsListRequest>) {
          return Reply{weights_->list(), {}};
        } else if constexpr (std::is_same_v<T, proto::GpuHostAlloc>) {
          auto out = gpu_host_.allocate(
              pool_->tiers(), config_.max_region_size,
              GpuHostRequester{session.id, session.who.uid, config_.gpu_host_bytes_per_uid}, m);
          if (!out) return tl::unexpected(out.error());
          logger("pool")->debug("client {} got {} bytes of GPU host memory on node {}", session.id,
                                out->reply.bytes, out->reply.numa_node);
          return Reply{out->reply, std::move(out->fd)};
        } else if constexpr (std::is_same_v<T, proto::ClientsRequest>) {
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
        } else if constexpr (std::is_same_v<T, proto::StatsRequest>) {
          proto::StatsReply reply;
          reply.counters = collect_counters();
          if (reply.counters.size() > proto::kMaxListEntries) reply.counters.resize(proto::kMaxListEntries);
          return Reply{reply, {}};
        } else if constexpr (std::is_same_v<T, proto::BackendsRequest>) {
          proto::BackendsReply reply;
          for (const auto& b : backends_) {
            reply.backends.push_back({b.cls, b.name, static_cast<proto::BackendState>(b.state),
                                      b.detail.substr(0, proto::kMaxStringLength)});
          }
          return Reply{reply, {}};
        } else {
          return fail(EPROTO, "unexpected message");
        }
      },
      message);
}

proto::StatusReply Daemon::status() const {
  proto::StatusReply s;
  s.daemon_version = CXLPOOL_VERSION_STRING;
  s.pid = static_cast<uint32_t>(::getpid());
  s.uptime_ns = monotonic_ns() - started_ns_;
  s.clients = static_cast<uint32_t>(sessions_.size());
  s.regions = static_cast<uint32_t>(pool_->regions().size());
  s.bytes_allocated = pool_->bytes_allocated();
  s.state_dir = state_dir_.string();
  s.config_source = config_.source;
  return s;
}

std::vector<proto::Counter> Daemon::collect_counters() const {
  std::vector<proto::Counter> out;
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  add("daemon.uptime_seconds", (monotonic_ns() - started_ns_) / 1000000000ull);
  add("daemon.reloads", counters_.reloads);
  add("clients.connected", sessions_.size());
  add("clients.accepted", counters_.clients_accepted);
  add("clients.refused", counters_.clients_refused);
  add("clients.refused_per_uid", counters_.clients_refused_per_uid);
  add("clients.refused_reserved", counters_.clients_refused_reserved);
  add("clients.closed", counters_.clients_closed);
  add("control.requests", counters_.requests);
  add("control.request_errors", counters_.request_errors);
  add("control.malformed_messages", counters_.malformed_messages);
  add("control.admin_denied", counters_.admin_denied);
  for (const auto& [type, count] : counters_.by_type) add("control.requests_" + type, count);
  const auto& pc = pool_->counters();
  add("pool.regions", pool_->regions().size());
  add("pool.allocated_bytes", pool_->bytes_allocated());
  add("pool.regions_created", pc.regions_created);
  add("pool.regions_destroyed", pc.regions_destroyed);
  add("pool.created_bytes", pc.bytes_created);
  add("pool.alloc_failures", pc.alloc_failures);
  add("pool.quota_rejections", pc.quota_rejections);
  add("pool.capacity_rejections", pc.capacity_rejections);
  add("pool.placement_checks", pc.placement_checks);
  add("pool.placement_mismatches", pc.placement_mismatches);
  add("pool.migrations", pc.migrations);
  add("pool.migrated_pages", pc.migrated_pages);
  add("pool.migrated_bytes", pc.migrated_bytes);
  add("pool.migration_failed_pages", pc.migration_failed_pages);
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
  gpu_host_.add_counters(out);
  for (const auto& tier : pool_->tiers()) {
    const std::string prefix = "tier." + tier.name + ".";
    add(prefix + "capacity_bytes", tier.capacity);
    add(prefix + "used_bytes", tier.used);
    add(prefix + "free_bytes", tier_free_bytes(tier, pool_->topology()));
  }
  return out;
}

}  // namespace cxlpool::daemon
