// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/proto/socket_io.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cxlpool::proto {

namespace {

constexpr size_t kFdSpace = CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage);
// Room for an SCM_CREDENTIALS block too, in case the socket has SO_PASSCRED
// set: without it the kernel would truncate the descriptors instead.
constexpr size_t kControlSpace = kFdSpace + CMSG_SPACE(sizeof(struct ucred));

union ControlBuffer {
  cmsghdr align;
  char bytes[kControlSpace];
};

// Takes ownership of every descriptor in the control data, whatever else is
// wrong with the datagram, so that each error path closes them.
std::vector<UniqueFd> adopt_fds(msghdr& msg) {
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  return fds;
}

}  // namespace

size_t descriptor_count(MsgType type) {
  switch (type) {
#define CXLPOOL_PROTO_DESCRIPTORS(type, code, id, kind, answer, fds) \
  case MsgType::code:                                                \
    return fds;
    CXLPOOL_PROTO_MESSAGES(CXLPOOL_PROTO_DESCRIPTORS)
#undef CXLPOOL_PROTO_DESCRIPTORS
  }
  return 0;
}

size_t descriptor_count(const Message& message) {
  if (const auto* load = std::get_if<WeightsLoad>(&message)) return load->paths.size();
  if (const auto* create = std::get_if<CkptCreate>(&message)) return create->pid == 0 ? 1 : 0;
  return descriptor_count(message_type(message));
}

Result<void> send_message(int sock, uint32_t request_id, const Message& message,
                          std::span<const int> fds, uint16_t version) {
  const char* name = message_type_name(message_type(message));
  if (fds.size() > kMaxFdsPerMessage) {
    return fail(EINVAL, std::string(name) + ": " + std::to_string(fds.size()) +
                            " descriptors exceed the limit of " + std::to_string(kMaxFdsPerMessage));
  }
  for (const int fd : fds) {
    if (fd < 0) return fail(EBADF, std::string(name) + ": invalid descriptor " + std::to_string(fd));
  }
  auto bytes = encode(request_id, message, version);
  if (!bytes) return tl::unexpected(std::move(bytes.error()));

  iovec iov{bytes->data(), bytes->size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ControlBuffer control{};
  if (!fds.empty()) {
    msg.msg_control = control.bytes;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }

  for (;;) {
    const ssize_t sent = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (sent >= 0) {
      // SOCK_SEQPACKET sends a datagram whole or not at all.
      if (static_cast<size_t>(sent) != bytes->size()) {
        return fail(EIO, std::string("sendmsg ") + name + ": short send of " + std::to_string(sent) +
                             " of " + std::to_string(bytes->size()) + " bytes");
      }
      return {};
    }
    if (errno != EINTR) return fail_errno(std::string("sendmsg ") + name);
  }
}

Result<Received> recv_message(int sock) {
  // One byte more than the limit, so an oversized datagram is seen as such
  // even where the kernel does not report MSG_TRUNC.
  // Reused per thread: zeroing 64 KiB for every message would cost more
  // than decoding it.
  thread_local std::vector<std::byte> buffer(kMaxMessageSize + 1);
  ControlBuffer control{};
  msghdr msg{};
  iovec iov{};
  ssize_t received = -1;
  for (;;) {
    iov = iovec{buffer.data(), buffer.size()};
    msg = msghdr{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);
    received = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (received >= 0) break;
    if (errno != EINTR) return fail_errno("recvmsg");
  }

  std::vector<UniqueFd> fds = adopt_fds(msg);
  if (msg.msg_flags & MSG_CTRUNC) {
    // The kernel has already closed the descriptors that did not fit.
    return fail(EMSGSIZE, "recvmsg: control data truncated (more than " +
                              std::to_string(kMaxFdsPerMessage) + " descriptors)");
  }
  if (fds.size() > kMaxFdsPerMessage) {
    return fail(EMSGSIZE, "recvmsg: " + std::to_string(fds.size()) +
                              " descriptors exceed the limit of " + std::to_string(kMaxFdsPerMessage));
  }
  if (msg.msg_flags & MSG_TRUNC) {
    return fail(EMSGSIZE, "recvmsg: datagram exceeds the message limit of " +
                              std::to_string(kMaxMessageSize) + " bytes");
  }
  if (received == 0) return fail(ECONNRESET, "recvmsg: peer closed the connection");

  auto envelope = decode(std::span<const std::byte>(buffer.data(), static_cast<size_t>(received)));
  if (!envelope) return tl::unexpected(std::move(envelope.error()));
  return Received{std::move(*envelope), std::move(fds)};
}

}  // namespace cxlpool::proto
