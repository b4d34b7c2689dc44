// SPDX-License-Identifier: Apache-2.0
// The device pool's control messages: backends register devices and send
// heartbeats, frontends attach and detach, operators list and fail over.
// Register and attach replies carry the pod file. Whoever holds the pod file
// can read and write every link in it (every frontend's packets and block
// data), as a host of a CXL pod can, so only admins (root or the admin
// group) register devices or attach: the engines and instances of the pod.
#include "../daemon.hpp"
#include "cxlpool/common/clock.hpp"

namespace cxlpool::daemon {

Result<DevpoolService*> Daemon::devpool_service() {
  if (!devpool_) return fail(ENOTSUP, "the device pool is off: " + devpool_off_reason_);
  return devpool_.get();
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::DevRegister& request) {
  if (auto ok = require_admin(session, "registering a pooled device"); !ok) return tl::unexpected(ok.error());
  auto pool = devpool_service();
  if (!pool) return tl::unexpected(pool.error());
  auto reply = (*pool)->register_device(session.id, session.who.uid, session.who.admin, request, monotonic_ns());
  if (!reply) return tl::unexpected(reply.error());
  Reply out{*reply, {}};
  out.borrowed_fd = (*pool)->pod_fd();
  return out;
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::DevHeartbeat& request) {
  auto pool = devpool_service();
  if (!pool) return tl::unexpected(pool.error());
  auto reply = (*pool)->heartbeat(session.id, request, monotonic_ns());
  if (!reply) return tl::unexpected(reply.error());
  return Reply{*reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::DevAttach& request) {
  if (auto ok = require_admin(session, "attaching to a pooled device"); !ok) return tl::unexpected(ok.error());
  auto pool = devpool_service();
  if (!pool) return tl::unexpected(pool.error());
  auto reply = (*pool)->attach(session.id, session.who.uid, session.who.admin, request, monotonic_ns());
  if (!reply) return tl::unexpected(reply.error());
  Reply out{*reply, {}};
  out.borrowed_fd = (*pool)->pod_fd();
  return out;
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::DevDetach& request) {
  auto pool = devpool_service();
  if (!pool) return tl::unexpected(pool.error());
  if (auto ok = (*pool)->detach(session.id, request.attachment_id); !ok) return tl::unexpected(ok.error());
  return Reply{proto::Ok{}, {}};
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::DevListRequest&) {
  if (!devpool_) return Reply{proto::DevListReply{}, {}};
  return Reply{devpool_->list(monotonic_ns()), {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::DevFailover& request) {
  if (auto ok = require_admin(session, "failing a device over"); !ok) return tl::unexpected(ok.error());
  auto pool = devpool_service();
  if (!pool) return tl::unexpected(pool.error());
  auto reply = (*pool)->failover(request.device_id, monotonic_ns());
  if (!reply) return tl::unexpected(reply.error());
  return Reply{*reply, {}};
}

}  // namespace cxlpool::daemon
