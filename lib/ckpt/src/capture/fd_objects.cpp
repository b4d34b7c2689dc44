// SPDX-License-Identifier: Apache-2.0
#include "fd_objects.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "capture_steps.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt::detail {
namespace {

// What sock_diag tells of a unix socket that /proc/net/unix does not.
struct UnixDiag {
  uint64_t peer = 0;
  // A listener: the connections waiting to be accepted, and the backlog.
  uint32_t rqueue = 0, wqueue = 0;
  bool has_rqlen = false;
  std::vector<uint8_t> name;  // sun_path's bytes as bound (NULs kept)
  std::optional<uint64_t> vfs_inode;  // a path's socket file
};

// Looks one unix socket up by inode (NETLINK_SOCK_DIAG, exact request).
Result<UnixDiag> unix_diag(uint64_t inode) {
  UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return fail_errno("sock_diag socket");
  struct {
    nlmsghdr header;
    unix_diag_req req;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST;
  ask.req.sdiag_family = AF_UNIX;
  ask.req.udiag_states = ~0u;
  ask.req.udiag_ino = static_cast<uint32_t>(inode);
  ask.req.udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN | UDIAG_SHOW_NAME | UDIAG_SHOW_VFS;
  ask.req.udiag_cookie[0] = ask.req.udiag_cookie[1] = ~0u;
  if (::send(nl.get(), &ask, sizeof ask, 0) != static_cast<ssize_t>(sizeof ask)) return fail_errno("sock_diag send");
  alignas(nlmsghdr) char buf[8192];
  const ssize_t n = ::recv(nl.get(), buf, sizeof buf, 0);
  if (n < 0) return fail_errno("sock_diag recv");
  auto* h = reinterpret_cast<nlmsghdr*>(buf);
  if (!NLMSG_OK(h, static_cast<unsigned>(n))) return fail(EIO, "sock_diag: short answer");
  if (h->nlmsg_type == NLMSG_ERROR) {
    const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
    return fail(-e->error, std::string("sock_diag: ") + std::strerror(-e->error));
  }
  if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) {
    return fail(EIO, "sock_diag: unexpected answer");
  }
  const auto* msg = static_cast<const unix_diag_msg*>(NLMSG_DATA(h));
  if (msg->udiag_ino != static_cast<uint32_t>(inode)) return fail(EIO, "sock_diag: answer for another socket");
  UnixDiag out;
  int left = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *msg));
  for (auto* a = reinterpret_cast<rtattr*>(const_cast<unix_diag_msg*>(msg) + 1); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= 4) {
      uint32_t peer = 0;
      std::memcpy(&peer, RTA_DATA(a), 4);
      out.peer = peer;
    } else if (a->rta_type == UNIX_DIAG_RQLEN && RTA_PAYLOAD(a) >= sizeof(unix_diag_rqlen)) {
      unix_diag_rqlen q{};
      std::memcpy(&q, RTA_DATA(a), sizeof q);
      out.rqueue = q.udiag_rqueue;
      out.wqueue = q.udiag_wqueue;
      out.has_rqlen = true;
    } else if (a->rta_type == UNIX_DIAG_NAME) {
      const auto* p = static_cast<const uint8_t*>(RTA_DATA(a));
      out.name.assign(p, p + RTA_PAYLOAD(a));
    } else if (a->rta_type == UNIX_DIAG_VFS && RTA_PAYLOAD(a) >= sizeof(unix_diag_vfs)) {
      unix_diag_vfs v{};
      std::memcpy(&v, RTA_DATA(a), sizeof v);
      out.vfs_inode = v.udiag_vfs_ino;
    }
  }
  return out;
}

std::string netlink_protocol(uint32_t p) {
  switch (p) {
    case 0: return "NETLINK_ROUTE";
    case 4: return "NETLINK_SOCK_DIAG";
    case 9: return "NETLINK_AUDIT";
    case 15: return "NETLINK_KOBJECT_UEVENT";
    case 16: return "NETLINK_GENERIC";
    default: return "protocol " + std::to_string(p);
  }
}

std::string unix_name(const std::string& path) { return path.empty() ? "unnamed" : "bound to " + path; }

// A descriptor of the frozen process, borrowed (pidfd_getfd): the very open
// file, so that reading it reads the process's pipe.
Result<UniqueFd> borrow_fd(int pidfd, int fd) {
  const int got = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (got < 0) return fail_errno("pidfd_getfd of fd " + std::to_string(fd));
  return UniqueFd(got);
}

Result<void> write_all(int fd, const uint8_t* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail_errno("writing a pipe's bytes back");
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return {};
}

// Reads what the pipe holds through its read end (FIONREAD bytes are there:
// the reads do not block, whatever the end's O_NONBLOCK) and writes it
// straight back through its write end, which has room for it: the pipe is as
// it was, and *contents has its bytes.
Result<void> read_pipe(int pidfd, const ClassifiedFd& reader, const ClassifiedFd& writer, FdObject& object) {
  auto r = borrow_fd(pidfd, reader.entry.fd);
  if (!r) return tl::unexpected(r.error());
  const int capacity = ::fcntl(r->get(), F_GETPIPE_SZ);
  if (capacity < 0) return fail_errno("F_GETPIPE_SZ of fd " + std::to_string(reader.entry.fd));
  object.detail = static_cast<uint32_t>(capacity);
  int queued = 0;
  if (::ioctl(r->get(), FIONREAD, &queued) != 0) return fail_errno("FIONREAD of fd " + std::to_string(reader.entry.fd));
  if (queued <= 0) return {};
  if (static_cast<uint32_t>(queued) > kMaxPipeContentsBytes) {
    return fail(ENOTSUP, "fd " + std::to_string(reader.entry.fd) + " is a pipe holding " + std::to_string(queued) +
                             " bytes, more than a checkpoint keeps");
  }
  if ((reader.entry.open_flags | writer.entry.open_flags) & O_DIRECT) {
    return fail(ENOTSUP, "fd " + std::to_string(reader.entry.fd) +
                             " is a packet-mode pipe (O_DIRECT) holding bytes, whose packet bounds a checkpoint "
                             "does not keep");
  }
  auto w = borrow_fd(pidfd, writer.entry.fd);
  if (!w) return tl::unexpected(w.error());
  object.contents.resize(static_cast<std::size_t>(queued));
  std::size_t got = 0;
  while (got < object.contents.size()) {
    const ssize_t n = ::read(r->get(), object.contents.data() + got, object.contents.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Put back what was taken before failing: the process keeps its bytes.
      (void)write_all(w->get(), object.contents.data(), got);
      return fail_errno("reading the bytes of the pipe at fd " + std::to_string(reader.entry.fd));
    }
    got += static_cast<std::size_t>(n);
  }
  return write_all(w->get(), object.contents.data(), got);
}

}  // namespace

std::optional<FdObject> eventfd_object(int fd, const FdInfo& info, std::string* refusal) {
  if (!info.has_eventfd_count || !info.has_eventfd_id) {
    *refusal = "an eventfd whose fdinfo shows no eventfd-count or eventfd-id";
    return std::nullopt;
  }
  if (!info.has_eventfd_semaphore) {
    *refusal = "an eventfd, and this kernel's fdinfo does not say whether it is a semaphore (eventfd-semaphore)";
    return std::nullopt;
  }
  FdObject o;
  o.fd = fd;
  o.object = info.eventfd_id;
  o.counter = info.eventfd_count;
  o.detail = info.eventfd_semaphore ? kEventfdSemaphore : 0;
  return o;
}

void SocketTables::load() {
  if (loaded_) return;
  loaded_ = true;
  if (auto t = read_proc(pid_, "net/unix")) {
    for (auto& row : parse_net_unix(*t)) unix_[row.inode] = row;
  }
  if (auto t = read_proc(pid_, "net/netlink")) {
    for (auto& row : parse_net_netlink(*t)) netlink_[row.inode] = row;
  }
  for (const char* table : {"tcp", "tcp6", "udp", "udp6", "raw", "raw6"}) {
    const std::string name = table;
    auto t = read_proc(pid_, "net/" + name);
    if (!t) continue;
    for (auto& row : parse_net_inet(*t, name.back() == '6')) {
      inet_[row.inode] = {name.substr(0, name.back() == '6' ? name.size() - 1 : name.size()), row};
    }
  }
}

std::string SocketTables::describe_other(int fd, uint64_t inode) {
  const std::string id = "socket:[" + std::to_string(inode) + "]";
  if (auto it = netlink_.find(inode); it != netlink_.end()) {
    return "a netlink socket (" + id + ", " + netlink_protocol(it->second.protocol) + ", port id " +
           std::to_string(it->second.portid) + ")";
  }
  if (auto it = inet_.find(inode); it != inet_.end()) {
    const auto& [proto, row] = it->second;
    return "a " + proto + " socket (" + id + ", local " + row.local + ", remote " + row.remote + ", state " +
           std::to_string(row.state) + ")";
  }
  // Not in a table this kernel shows: ask the socket itself.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  if (pidfd) {
    if (auto s = borrow_fd(pidfd.get(), fd)) {
      int domain = -1, type = -1, protocol = -1;
      socklen_t len = sizeof domain;
      ::getsockopt(s->get(), SOL_SOCKET, SO_DOMAIN, &domain, &len);
      len = sizeof type;
      ::getsockopt(s->get(), SOL_SOCKET, SO_TYPE, &type, &len);
      len = sizeof protocol;
      ::getsockopt(s->get(), SOL_SOCKET, SO_PROTOCOL, &protocol, &len);
      return "a socket (" + id + ", family " + std::to_string(domain) + ", " +
             socket_type_name(static_cast<uint32_t>(type)) + ", protocol " + std::to_string(protocol) + ")";
    }
  }
  return "a socket (" + id + ") in none of the unix, netlink, tcp, udp or raw tables";
}

std::optional<FdObject> SocketTables::listener(int fd, const UnixSocketRow& row, const std::string& head,
                                               std::string* refusal) {
  auto diag = unix_diag(row.inode);
  if (!diag) {
    *refusal = head + ", listening; sock_diag does not describe it: " + diag.error().message + ")";
    return std::nullopt;
  }
  if (row.type != SOCK_STREAM && row.type != SOCK_SEQPACKET) {
    *refusal = head + ", listening)";
    return std::nullopt;
  }
  if (!diag->has_rqlen) {
    *refusal = head + ", listening; sock_diag does not say whether connections wait to be accepted)";
    return std::nullopt;
  }
  if (diag->rqueue != 0) {
    *refusal = head + ", listening, with " + std::to_string(diag->rqueue) +
               (diag->rqueue == 1 ? " connection" : " connections") +
               " waiting to be accepted, which a checkpoint does not keep)";
    return std::nullopt;
  }
  auto& name = diag->name;
  // A path's name ends at its NUL, which the kernel keeps with it.
  if (!name.empty() && name[0] != 0) name.erase(std::find(name.begin(), name.end(), uint8_t{0}), name.end());
  if (name.size() < 2 || name.size() > kMaxUnixAddressBytes || (name[0] != 0 && name[0] != '/')) {
    *refusal = head + ", listening, bound to a name a restore cannot bind again (" + std::to_string(name.size()) +
               " bytes" + (name.empty() || name[0] == 0 ? "" : ", not an absolute path") + "))";
    return std::nullopt;
  }
  if (name[0] == '/') {
    // The path must still name this very socket, else a restore would bind
    // a name that is now another's (or nothing's).
    const std::string path(name.begin(), name.end());
    struct stat st {};
    if (::lstat(proc_path(pid_, "root" + path).c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
        !diag->vfs_inode || st.st_ino != *diag->vfs_inode) {
      *refusal = head + ", listening; the path no longer names this socket)";
      return std::nullopt;
    }
  }
  FdObject o;
  o.fd = fd;
  o.object = row.inode;
  o.detail = row.type;
  // A listener's write queue figure is its backlog (sk_max_ack_backlog).
  o.counter = diag->wqueue;
  o.contents = std::move(name);
  return o;
}

std::optional<FdObject> SocketTables::classify(ClassifiedFd& c, uint64_t inode) {
  load();
  const int fd = c.entry.fd;
  std::string* refusal = &c.refusal;
  auto it = unix_.find(inode);
  if (it == unix_.end()) {
    *refusal = describe_other(fd, inode);
    return std::nullopt;
  }
  const UnixSocketRow& row = it->second;
  const std::string head = "a unix " + socket_type_name(row.type) + " socket (socket:[" + std::to_string(inode) + "], " +
                           unix_name(row.path);
  if (row.listening) {
    auto o = listener(fd, row, head, refusal);
    if (o) {
      c.entry.kind = FdKind::kUnixListener;
      c.what = head + ", listening, backlog " + std::to_string(o->counter) + ")";
    }
    return o;
  }
  c.entry.kind = FdKind::kSocketPair;
  auto diag = unix_diag(inode);
  if (!diag) {
    *refusal = head + "; its peer is unknown: " + diag.error().message + ")";
    return std::nullopt;
  }
  if (diag->peer == 0) {
    *refusal = head + ", not connected)";
    return std::nullopt;
  }
  const std::string with_peer = head + ", peer socket:[" + std::to_string(diag->peer) + "]";
  if (!row.path.empty()) {
    *refusal = with_peer + "; only an unnamed socketpair is restored)";
    return std::nullopt;
  }
  if (diag->rqueue != 0) {
    *refusal = with_peer + ", " + std::to_string(diag->rqueue) + " bytes queued to it, which a checkpoint does not keep)";
    return std::nullopt;
  }
  if (row.type != 1 && row.type != 2 && row.type != 5) {
    *refusal = with_peer + ")";
    return std::nullopt;
  }
  FdObject o;
  o.fd = fd;
  o.object = inode;
  o.peer = diag->peer;
  o.detail = row.type;
  // Kept for the refusal should the peer turn out to be in another process.
  *refusal = with_peer + " held by another process or not as a socket a checkpoint keeps)";
  return o;
}

namespace {

// The pipes' fds by inode, in fd order.
std::map<uint64_t, std::vector<ClassifiedFd*>> pipe_ends(std::vector<ClassifiedFd>& fds) {
  std::map<uint64_t, std::vector<ClassifiedFd*>> pipes;
  for (ClassifiedFd& c : fds) {
    if (c.refusal.empty() && c.entry.kind == FdKind::kPipe) pipes[c.object->object].push_back(&c);
  }
  return pipes;
}

bool reads(const ClassifiedFd& c) { return (c.entry.open_flags & O_ACCMODE) == O_RDONLY; }

// The lowest fd of the pipe's read (or write) ends; nullptr without one.
ClassifiedFd* first_end(const std::vector<ClassifiedFd*>& ends, bool read_end) {
  for (ClassifiedFd* c : ends) {
    if (reads(*c) == read_end) return c;
  }
  return nullptr;
}

}  // namespace

void pair_fd_objects(std::vector<ClassifiedFd>& fds) {
  // Socket inode -> its fds (more than one when dup'ed).
  std::map<uint64_t, std::vector<ClassifiedFd*>> sockets;
  for (ClassifiedFd& c : fds) {
    // A socketpair candidate keeps its refusal text until its peer is found.
    if (!c.refusal.empty() && c.object && c.entry.kind == FdKind::kSocketPair) {
      sockets[c.object->object].push_back(&c);
    }
  }
  for (auto& [inode, ends] : sockets) {
    for (ClassifiedFd* socket : ends) {
      if (!sockets.contains(socket->object->peer)) continue;
      socket->refusal.clear();
      socket->what = "one end of a unix " + socket_type_name(socket->object->detail) + " socketpair (socket:[" +
                     std::to_string(inode) + "], peer socket:[" + std::to_string(socket->object->peer) + "])";
    }
  }
  for (ClassifiedFd& c : fds) {
    if (!c.refusal.empty()) c.object.reset();
  }
  for (auto& [inode, ends] : pipe_ends(fds)) {
    const bool has_reader = first_end(ends, true) != nullptr, has_writer = first_end(ends, false) != nullptr;
    for (ClassifiedFd* c : ends) {
      if (!has_reader || !has_writer) {
        c->refusal = "a pipe (pipe:[" + std::to_string(inode) + "]) whose " + (has_reader ? "write" : "read") +
                     " end the process does not hold";
        c->object.reset();
      } else {
        c->what = std::string("the ") + (reads(*c) ? "read" : "write") + " end of pipe:[" + std::to_string(inode) +
                  "], whose other end is held too";
      }
    }
  }
}

Result<void> read_pipe_contents(pid_t pid, std::vector<ClassifiedFd>& fds) {
  auto pipes = pipe_ends(fds);
  if (pipes.empty()) return {};
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return fail_errno("pidfd_open " + std::to_string(pid));
  for (auto& [inode, ends] : pipes) {
    FdObject& first = *ends.front()->object;
    if (auto ok = read_pipe(pidfd.get(), *first_end(ends, true), *first_end(ends, false), first); !ok) return ok;
    for (ClassifiedFd* c : ends) c->object->detail = first.detail;
  }
  return {};
}

}  // namespace cxlpool::ckpt::detail
