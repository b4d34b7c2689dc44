// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/client/connection.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/default_paths.hpp"

namespace cxlpool::client {
namespace {

Result<UniqueFd> connect_socket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return fail(ENAMETOOLONG, "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return fail_errno("socket(AF_UNIX, SOCK_SEQPACKET)");
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int code = errno;
    std::string hint;
    if (code == ENOENT || code == ECONNREFUSED) hint = " (is cxlpoold running?)";
    if (code == EACCES) hint = " (not in the socket's group?)";
    return fail(code, errno_message("connect " + path, code) + hint);
  }
  return sock;
}

// The daemon closed the connection. A refusal (max_clients) is explained in
// an ErrorReply sent just before, which may still be queued behind the reset.
Error closed_by_daemon(int sock) {
  auto why = proto::recv_message(sock);
  if (auto* err = why ? std::get_if<proto::ErrorReply>(&why->envelope.message) : nullptr) {
    return Error{err->code, err->message};
  }
  return Error{ENOTCONN, "cxlpoold closed the connection"};
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(const std::string& socket_path,
                                                     const std::string& client_name) {
  std::string path = socket_path;
  if (path.empty()) {
    auto def = default_socket_path();
    if (!def) return tl::unexpected(def.error());
    path = *def;
  }
  auto sock = connect_socket(path);
  if (!sock) return tl::unexpected(sock.error());
  std::unique_ptr<Connection> conn(new Connection(std::move(*sock), path));
  proto::Hello hello;
  // The protocol carries printable ASCII names only; anything else becomes '?'.
  hello.client_name = client_name.substr(0, proto::kMaxClientNameLength);
  for (char& c : hello.client_name) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  auto reply = conn->call_for<proto::HelloReply>(hello);
  if (!reply) return tl::unexpected(reply.error());
  if (reply->version < proto::kVersionMin || reply->version > proto::kVersionMax) {
    return fail(EPROTONOSUPPORT, "daemon chose protocol version " + std::to_string(reply->version) +
                                     ", this library speaks " + std::to_string(proto::kVersionMin) +
                                     ".." + std::to_string(proto::kVersionMax));
  }
  conn->hello_ = std::move(*reply);
  return conn;
}

// The daemon answers most requests within microseconds; polling briefly
// before the blocking receive saves a scheduler wake-up per call, which in a
// VM costs more than the request itself. CXLPOOL_SPIN_US (default 50, 0 = off)
// bounds the poll.
void Connection::wait_for_reply() {
  static const uint64_t spin_ns = [] {
    const char* env = std::getenv("CXLPOOL_SPIN_US");
    const long us = env != nullptr ? std::strtol(env, nullptr, 10) : 50;
    return static_cast<uint64_t>(std::clamp(us, 0L, 10000L)) * 1000;
  }();
  if (spin_ns == 0) return;
  pollfd p{sock_.get(), POLLIN, 0};
  const uint64_t deadline = monotonic_ns() + spin_ns;
  while (::poll(&p, 1, 0) == 0 && monotonic_ns() < deadline) {
    ::sched_yield();  // let the daemon run if it shares this core
  }
}

void Connection::close() {
  std::lock_guard lock(mutex_);
  broken_ = true;
  sock_.reset();
}

bool Connection::closed() {
  std::lock_guard lock(mutex_);
  return broken_;
}

Result<proto::Received> Connection::call(const proto::Message& request, std::span<const int> fds) {
  std::lock_guard lock(mutex_);
  if (broken_) return fail(ENOTCONN, "connection to cxlpoold is closed");
  const uint32_t id = next_request_id_++;
  if (next_request_id_ == 0) next_request_id_ = 1;
  auto sent = proto::send_message(sock_.get(), id, request, fds, hello_.version ? hello_.version : proto::kVersionMax);
  if (!sent) {
    if (sent.error().code == EPIPE || sent.error().code == ECONNRESET) {
      broken_ = true;
      return tl::unexpected(closed_by_daemon(sock_.get()));
    }
    return tl::unexpected(sent.error());
  }
  wait_for_reply();
  auto received = proto::recv_message(sock_.get());
  if (!received) {
    broken_ = true;
    if (received.error().code == ECONNRESET) return tl::unexpected(closed_by_daemon(sock_.get()));
    return tl::unexpected(received.error());
  }
  if (received->envelope.header.request_id != id) {
    // The daemon replies to connection-level failures with id 0 and closes.
    if (auto* err = std::get_if<proto::ErrorReply>(&received->envelope.message)) {
      broken_ = true;
      return fail(err->code, err->message);
    }
    broken_ = true;
    return fail(EPROTO, "reply to request " + std::to_string(received->envelope.header.request_id) +
                            " while waiting for " + std::to_string(id));
  }
  if (auto* err = std::get_if<proto::ErrorReply>(&received->envelope.message)) {
    return fail(err->code, err->message);
  }
  return received;
}

}  // namespace cxlpool::client
