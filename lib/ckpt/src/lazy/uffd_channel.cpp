// SPDX-License-Identifier: Apache-2.0
// The clone side with libc (create and register a userfaultfd, send it) and
// the pager's receiving end. Creating and sending go through uffd_raw, the
// same code the freestanding restorer runs.
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cxlpool/ckpt/lazy_pager.hpp"
#include "cxlpool/ckpt/uffd_raw.hpp"

namespace cxlpool::ckpt {

namespace {

struct LibcSyscall {
  long operator()(long nr, long a, long b, long c) const {
    long r = ::syscall(nr, a, b, c);
    return r < 0 ? -errno : r;
  }
};

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<UniqueFd> create_registered_uffd(std::span<const LazyRange> ranges) {
  LibcSyscall sys;
  long fd = uffd_raw::open(sys);
  if (fd < 0) return fail(static_cast<int>(-fd), errno_message("userfaultfd", static_cast<int>(-fd)));
  UniqueFd uffd(static_cast<int>(fd));
  if (long r = uffd_raw::api(sys, uffd.get()); r < 0)
    return fail(static_cast<int>(-r), errno_message("UFFDIO_API (fork, remap, remove and unmap events)",
                                                    static_cast<int>(-r)));
  for (const LazyRange& range : ranges) {
    if (long r = uffd_raw::register_missing(sys, uffd.get(), range.addr, range.length); r < 0)
      return fail(static_cast<int>(-r), errno_message("UFFDIO_REGISTER " + hex(range.addr) + "+" + hex(range.length),
                                                      static_cast<int>(-r)));
  }
  return uffd;
}

Result<void> send_uffd(int sock, int uffd, uint64_t tag) {
  long r = uffd_raw::send_fd(LibcSyscall{}, sock, uffd, tag);
  if (r < 0) return fail(static_cast<int>(-r), errno_message("send userfaultfd", static_cast<int>(-r)));
  if (r != sizeof tag) return fail(EPROTO, "send userfaultfd: short message");
  return {};
}

Result<UniqueFd> receive_uffd(int sock, uint64_t* tag) {
  uint64_t value = 0;
  iovec iov{&value, sizeof value};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail_errno("receive userfaultfd");
  UniqueFd received;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (!received) received.reset(fd);
      else ::close(fd);  // one descriptor per message; extras are not ours to keep
    }
  }
  if (n == 0 && !received) return fail(ECONNRESET, "receive userfaultfd: peer closed the socket");
  if (!received) return fail(EPROTO, "receive userfaultfd: message without a descriptor");
  // A sender may carry a shorter tag (one byte is enough to carry the
  // descriptor); it reads as that many low bytes.
  if (static_cast<size_t>(n) < sizeof value) value &= (uint64_t{1} << (8 * n)) - 1;
  if (tag != nullptr) *tag = value;
  return received;
}

}  // namespace cxlpool::ckpt
