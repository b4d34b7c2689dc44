// SPDX-License-Identifier: Apache-2.0
// Shared model weights: loading a model (or finding it loaded), unloading it
// and listing them. A load copies on a worker; its reply waits for the copy
// (finish_weight_loads).
#include "../daemon.hpp"

namespace cxlpool::daemon {

Result<Daemon::Reply> Daemon::weights_reply(Result<WeightsAnswer> answer) {
  if (!answer) return tl::unexpected(answer.error());
  if (!answer->has_value()) {
    Reply reply;
    reply.deferred = true;
    return reply;
  }
  return Reply{**answer, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::WeightsLoad& request) {
  // The client's own descriptors of the files: the daemon opens no path.
  return weights_reply(weights_->load(request, std::move(request_fds_), session.who,
                                      WeightsWaiter{session.id, current_request_id_}));
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::WeightsOpen& request) {
  return weights_reply(weights_->open(request.model, session.who, WeightsWaiter{session.id, current_request_id_}));
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::WeightsUnload& request) {
  auto reply = weights_->unload(request.model, session.who);
  if (!reply) return tl::unexpected(reply.error());
  return Reply{*reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::WeightsListRequest&) {
  return Reply{weights_->list(), {}};
}

}  // namespace cxlpool::daemon
