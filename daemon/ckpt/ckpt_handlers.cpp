// SPDX-License-Identifier: Apache-2.0
// Checkpoints: create and restore run on the checkpoint worker and answer
// later (finish_ckpt_tasks); list and remove answer at once.
#include "../daemon.hpp"

namespace cxlpool::daemon {

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::CkptCreate& request) {
  auto queued = ckpt_->create(request, std::move(request_fds_), CkptClient{session.who, session.pid},
                              CkptWaiter{session.id, current_request_id_});
  if (!queued) return tl::unexpected(queued.error());
  Reply reply;
  reply.deferred = true;
  return reply;
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::CkptRestore& request) {
  auto queued = ckpt_->restore(request, std::move(request_fds_), session.who,
                               CkptWaiter{session.id, current_request_id_});
  if (!queued) return tl::unexpected(queued.error());
  Reply reply;
  reply.deferred = true;
  return reply;
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::CkptListRequest&) { return Reply{ckpt_->list(), {}}; }

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::CkptRemove& request) {
  if (auto removed = ckpt_->remove(request.name, session.who); !removed) return tl::unexpected(removed.error());
  return Reply{proto::Ok{}, {}};
}

void Daemon::finish_ckpt_tasks() {
  for (auto& done : ckpt_->finish()) {
    auto it = sessions_.find(done.waiter.session_id);
    if (it == sessions_.end()) continue;  // the checkpoint stays for `ckpt list`
    send_deferred(*it->second, done.waiter.request_id, done.reply);
  }
}

}  // namespace cxlpool::daemon
