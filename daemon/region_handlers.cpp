// SPDX-License-Identifier: Apache-2.0
// Tiers and pool regions: allocation, named regions, listing, freeing and
// migration between tiers.
#include <sys/stat.h>

#include "daemon.hpp"
#include "logging.hpp"

namespace cxlpool::daemon {

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

Result<Daemon::Reply> Daemon::create_region(Session& session, const CreateSpec& spec) {
  if (session.handle_count >= config_.max_regions_per_client) {
    return fail(EMFILE, "client holds " + std::to_string(session.handle_count) +
                            " regions (max_regions_per_client)");
  }
  auto region = pool_->create(spec, session.who);
  if (!region) return tl::unexpected(region.error());
  const ScopedLogFields fields({.region = (*region)->id});
  logger("pool")->debug("client {} created region {} ({} bytes on tier {})", session.id, (*region)->id,
                        (*region)->size, (*region)->tier_id);
  return region_reply(session, **region, true);
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::TiersRequest&) {
  proto::TiersReply reply;
  for (const auto& tier : pool_->tiers()) reply.tiers.push_back(describe_tier(tier, pool_->topology()));
  return Reply{reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::RegionAlloc& request) {
  CreateSpec spec{request.tier_id, request.size, request.flags, proto::RegionKind::kLeased, {}, 0600};
  return create_region(session, spec);
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::RegionFree& request) {
  // An alias stands for its region only on the connection that set it.
  const auto alias = session.region_aliases.find(request.region_id);
  const uint64_t region_id = alias != session.region_aliases.end() ? alias->second : request.region_id;
  auto it = session.handles.find(region_id);
  if (it == session.handles.end()) {
    return fail(ENOENT, "this client holds no handle to region " + std::to_string(request.region_id));
  }
  if (--it->second == 0) {
    session.handles.erase(it);
    std::erase_if(session.region_aliases, [&](const auto& a) { return a.second == region_id; });
  }
  --session.handle_count;
  pool_->release_handle(region_id);
  return Reply{proto::Ok{}, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::RegionAlias& request) {
  const std::string what =
      "alias " + std::to_string(request.alias) + " for region " + std::to_string(request.region_id);
  const Region* region = pool_->find(request.region_id);
  if (region == nullptr || !session.handles.contains(request.region_id) ||
      region->kind != proto::RegionKind::kLeased || region->lease_client != session.id) {
    return fail(EINVAL, what + ": not a leased region this connection allocated");
  }
  // An id this connection holds keeps meaning its own region.
  if (session.handles.contains(request.alias)) {
    return fail(EINVAL, what + ": region " + std::to_string(request.alias) + " is held by this connection");
  }
  // An id this daemon has not given yet could later name a region this
  // connection opens, and its RegionFree would then free the wrong one.
  if (request.alias >= pool_->next_id()) {
    return fail(EINVAL, what + ": no region has had id " + std::to_string(request.alias) + " yet");
  }
  if (session.region_aliases.contains(request.alias)) return fail(EINVAL, what + ": the alias is set already");
  for (const auto& [alias, target] : session.region_aliases) {
    if (target == request.region_id) {
      return fail(EINVAL, what + ": the region is aliased already (as " + std::to_string(alias) + ")");
    }
  }
  if (session.region_aliases.size() >= proto::kMaxRegionAliases) {
    return fail(ENOSPC, what + ": at most " + std::to_string(proto::kMaxRegionAliases) + " aliases a connection");
  }
  session.region_aliases.emplace(request.alias, request.region_id);
  return Reply{proto::Ok{}, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::NamedCreate& request) {
  // A client squatting an arena's name would keep the store from starting.
  if (request.name.rfind(kKvReservedPrefix, 0) == 0) {
    return fail(EPERM, "region names starting with '" + std::string(kKvReservedPrefix) +
                           "' are reserved for the daemon's KV store");
  }
  if (request.name.rfind(kWeightsRegionPrefix, 0) == 0) {
    return fail(EPERM, "region names starting with '" + std::string(kWeightsRegionPrefix) +
                           "' are reserved for the daemon's shared weights");
  }
  CreateSpec spec{request.tier_id, request.size, request.flags, proto::RegionKind::kNamed, request.name,
                  request.mode};
  return create_region(session, spec);
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::NamedOpen& request) {
  if (session.handle_count >= config_.max_regions_per_client) {
    return fail(EMFILE, "client holds too many regions (max_regions_per_client)");
  }
  const bool writable = (request.flags & proto::kOpenWritable) != 0;
  // A client that passed descriptors of a shared model's files may
  // map its region whatever the mode (WeightsService::proved_access).
  const bool proved = weights_ && weights_->proved_access(session.id, request.name);
  auto region = pool_->open_named(request.name, writable, session.who, proved);
  if (!region) return tl::unexpected(region.error());
  return region_reply(session, **region, writable);
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::NamedUnlink& request) {
  if (auto ok = pool_->unlink_named(request.name, session.who); !ok) return tl::unexpected(ok.error());
  return Reply{proto::Ok{}, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::RegionsRequest&) {
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
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::RegionMigrate& request) {
  if (auto ok = require_admin(session, "region migrate"); !ok) return tl::unexpected(ok.error());
  auto job = pool_->begin_migration(request.region_id, request.target_tier, move_all_);
  if (!job) return tl::unexpected(job.error());
  if (job->node < 0 || job->from_tier == job->to_tier) {
    // Nothing to move (same tier, or no placement backend): answer now.
    Result<hal::MoveStats> moved = job->run(nullptr);
    auto reply = pool_->finish_migration(*job, moved);
    migration_durations_.record(reply.elapsed_ns);
    return Reply{reply, {}};
  }
  // finish_migrations() sends the MigrateReply when the worker is done.
  migrations_->submit(MigrationTask{*job, session.id, current_request_id_});
  Reply reply;
  reply.deferred = true;
  return reply;
}

}  // namespace cxlpool::daemon
