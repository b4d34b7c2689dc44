// SPDX-License-Identifier: Apache-2.0
#include "kv_peer_socket.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>

namespace cxlpool::daemon {
namespace {

Result<addrinfo*> resolve(const std::string& address, bool passive) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return fail(EINVAL, "'" + address + "' is not HOST:PORT");
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return fail(EINVAL, "'" + address + "': " + ::gai_strerror(rc));
  }
  return found;
}

void set_timeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Result<void> read_exact(int fd, std::byte* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::recv(fd, out + done, n - done, 0);
    if (got == 0) return fail(ECONNRESET, "the peer closed the connection");
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail_errno("recv");
    }
    done += static_cast<size_t>(got);
  }
  return {};
}

}  // namespace

Result<UniqueFd> kv_peer_listen(const std::string& address) {
  auto found = resolve(address, true);
  if (!found) return tl::unexpected(found.error());
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(*found, ::freeaddrinfo);
  UniqueFd fd(::socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fail_errno("socket");
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), list->ai_addr, list->ai_addrlen) != 0) return fail_errno("bind " + address);
  if (::listen(fd.get(), 64) != 0) return fail_errno("listen " + address);
  return fd;
}

Result<UniqueFd> kv_peer_connect(const std::string& address, std::chrono::milliseconds timeout) {
  auto found = resolve(address, false);
  if (!found) return tl::unexpected(found.error());
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(*found, ::freeaddrinfo);
  UniqueFd fd(::socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return fail_errno("socket");
  if (::connect(fd.get(), list->ai_addr, list->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return fail_errno("connect " + address);
    pollfd p{fd.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready <= 0) return fail(ETIMEDOUT, "connect " + address + ": no answer");
    int error = 0;
    socklen_t len = sizeof error;
    (void)::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return fail(error, "connect " + address + ": " + std::strerror(error));
  }
  // Blocking from here, bounded by the timeouts.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  set_timeouts(fd.get(), timeout);
  return fd;
}

Result<void> send_kv_peer_frame(int fd, KvPeerType type, uint64_t id, std::span<const std::byte> body) {
  const std::vector<std::byte> header = encode_kv_peer_header({type, static_cast<uint32_t>(body.size()), id});
  iovec iov[2] = {{const_cast<std::byte*>(header.data()), header.size()},
                  {const_cast<std::byte*>(body.data()), body.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = body.empty() ? 1 : 2;
  size_t left = header.size() + body.size();
  while (left > 0) {
    const ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return fail_errno("send");
    }
    left -= static_cast<size_t>(sent);
    // Advance past what went out.
    auto done = static_cast<size_t>(sent);
    while (done > 0 && msg.msg_iovlen > 0) {
      iovec& v = msg.msg_iov[0];
      const size_t step = std::min(done, v.iov_len);
      v.iov_base = static_cast<std::byte*>(v.iov_base) + step;
      v.iov_len -= step;
      done -= step;
      if (v.iov_len == 0) {
        ++msg.msg_iov;
        --msg.msg_iovlen;
      }
    }
  }
  return {};
}

Result<KvPeerFrame> recv_kv_peer_frame(int fd) {
  std::byte header[kKvPeerHeaderBytes];
  if (auto ok = read_exact(fd, header, sizeof header); !ok) return tl::unexpected(ok.error());
  auto decoded = decode_kv_peer_header(header);
  if (!decoded) return tl::unexpected(decoded.error());
  KvPeerFrame frame;
  frame.header = *decoded;
  frame.body.resize(decoded->body_bytes);
  if (auto ok = read_exact(fd, frame.body.data(), frame.body.size()); !ok) return tl::unexpected(ok.error());
  return frame;
}

}  // namespace cxlpool::daemon
