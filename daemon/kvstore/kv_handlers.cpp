// SPDX-License-Identifier: Apache-2.0
// The daemon's side of the KV store's control messages: opening a
// connection's data path (its four descriptors go back with the reply and its
// doorbell into the event loop), namespaces, status and the admin drop.
#include <sys/epoll.h>

#include <cerrno>
#include <cstring>

#include "../daemon.hpp"
#include "../logging.hpp"

namespace cxlpool::daemon {

Result<KvService*> Daemon::kv_service() {
  if (!kv_) return fail(EOPNOTSUPP, "the KV store is off: " + kv_off_reason_);
  return kv_.get();
}

void Daemon::watch_kv_io() {
  if (!kv_) return;
  if (kv_commit_fd_ < 0) {
    if (const int fd = kv_->commit_fd(); fd >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kTagKvCommits;
      if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) == 0) {
        kv_commit_fd_ = fd;
      } else {
        // Without it commits still finish, found by the loop's polling
        // (commits in flight keep it from sleeping).
        logger("kvstore")->warn("cannot watch the commit workers' eventfd: {}", std::strerror(errno));
      }
    }
  }
  if (kv_io_fd_ >= 0) return;
  const int fd = kv_->completion_fd();
  if (fd < 0) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagKvIo;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    // Without it SSD reads still finish, found by the loop's polling.
    logger("kvstore")->warn("cannot watch the SSD completion eventfd: {}", std::strerror(errno));
    return;
  }
  kv_io_fd_ = fd;
}

bool Daemon::poll_kv() { return kv_ != nullptr && kv_->poll() != 0; }

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::KvOpen& request) {
  auto kv = kv_service();
  if (!kv) return tl::unexpected(kv.error());
  auto opened = (*kv)->open(session.id, session.who.uid, request);
  watch_kv_io();
  if (!opened) return tl::unexpected(opened.error());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kKvDoorbellBit | session.id;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, opened->doorbell_fd, &ev) != 0) {
    const Error error = Error{errno, "epoll_ctl add KV doorbell"};
    (*kv)->close(session.id);
    return tl::unexpected(error);
  }
  session.kv_doorbell_fd = opened->doorbell_fd;
  Reply reply{std::move(opened->reply), {}};
  for (auto& fd : opened->fds) reply.more_fds.push_back(std::move(fd));
  return reply;
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::KvNamespaceOpen& request) {
  auto kv = kv_service();
  if (!kv) return tl::unexpected(kv.error());
  auto opened = (*kv)->open_namespace(session.id, session.who, request);
  watch_kv_io();
  if (!opened) return tl::unexpected(opened.error());
  // The namespace's views, read-only, when the reply grants reading.
  Reply reply{opened->reply, {}};
  for (auto& fd : opened->views) reply.more_fds.push_back(std::move(fd));
  return reply;
}

Result<Daemon::Reply> Daemon::handle(Session&, const proto::KvStatusRequest&) {
  if (!kv_) {
    proto::KvStatusReply reply;
    reply.enabled = 0;
    reply.detail = kv_off_reason_.substr(0, proto::kMaxStringLength);
    return Reply{reply, {}};
  }
  auto reply = kv_->status();
  watch_kv_io();
  return Reply{reply, {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::KvNamespacesRequest&) {
  auto kv = kv_service();
  if (!kv) return Reply{proto::KvNamespacesReply{}, {}};
  auto reply = (*kv)->namespaces(session.who);
  watch_kv_io();
  if (!reply) return tl::unexpected(reply.error());
  return Reply{std::move(*reply), {}};
}

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::KvNamespaceDrop& request) {
  // The namespace's owner or an admin (checked by the service).
  auto kv = kv_service();
  if (!kv) return tl::unexpected(kv.error());
  auto reply = (*kv)->drop_namespace(session.who, request.namespace_id);
  watch_kv_io();
  if (!reply) return tl::unexpected(reply.error());
  return Reply{*reply, {}};
}

}  // namespace cxlpool::daemon
