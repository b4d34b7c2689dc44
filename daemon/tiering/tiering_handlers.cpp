// SPDX-License-Identifier: Apache-2.0
// The tiering engine's control messages: a connection's access-report ring,
// the engine's status, its hottest pages and its knobs.
#include "../daemon.hpp"
#include "../logging.hpp"

namespace cxlpool::daemon {

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::AccessRingOpen& request) {
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

Result<Daemon::Reply> Daemon::handle(Session&, const proto::TieringStatusRequest&) {
  return Reply{tiering_->status(), {}};
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::TieringHot& request) {
  return Reply{tiering_->hot(request.top), {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::TieringSet& request) {
  if (auto ok = require_admin(session, "tiering set"); !ok) return tl::unexpected(ok.error());
  auto reply = tiering_->set(request.key, request.value);
  if (!reply) return tl::unexpected(reply.error());
  return Reply{*reply, {}};
}

}  // namespace cxlpool::daemon
