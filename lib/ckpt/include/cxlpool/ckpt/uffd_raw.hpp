// SPDX-License-Identifier: Apache-2.0
// The clone's half of migrate-on-access at the level of raw system calls:
// create a userfaultfd, negotiate the features the lazy pager needs,
// register ranges for missing faults, and send the descriptor to the pager
// over a unix socket. The restorer's last stage runs without libc, so this
// header uses nothing but kernel UAPI headers and the system call entry the
// caller passes in:
//
//   struct Sys { long operator()(long nr, long a, long b, long c) const; };
//
// which must return the kernel's raw result (a value, or -errno). On x86-64
// and aarch64 `RawSyscall` below is such an entry, written in inline
// assembly; code that has libc may pass one that calls syscall(2) and turns
// -1/errno into -errno instead. Every function here returns >= 0 or -errno,
// keeps no state, allocates nothing and is safe to call from freestanding
// code compiled with -fno-stack-protector and without exceptions.
//
// The descriptor stays open in the clone after it was sent: while anyone in
// the clone holds it, the pager's death makes a missing fault wait (killable)
// instead of resolving to a zero page, which would be wrong data (see
// docs/ckpt.md "Migrate-on-access").
#pragma once

#include <asm/unistd.h>
#include <linux/ioctl.h>
#include <linux/userfaultfd.h>

namespace cxlpool::ckpt::uffd_raw {

// Events the pager must see so that the clone never reads wrong data: a
// fork whose child would otherwise lose its registration (zero pages), and
// the madvise/munmap/mremap changes that move or drop pages.
inline constexpr unsigned long long kFeatures = UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_EVENT_REMAP |
                                                UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_UNMAP;

// O_CLOEXEC | O_NONBLOCK (the same on every Linux architecture this builds
// for); spelled out so that no libc or <linux/fcntl.h> (which clashes with
// libc's) is needed. The pager reads without blocking; the flag is shared
// by every copy of the descriptor.
inline constexpr long kOpenFlags = 02000000 | 04000;
inline constexpr long kOpenReadWrite = 02;

#if defined(__x86_64__)
struct RawSyscall {
  long operator()(long nr, long a, long b, long c) const {
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
  }
};
#elif defined(__aarch64__)
struct RawSyscall {
  long operator()(long nr, long a, long b, long c) const {
    register long x8 asm("x8") = nr;
    register long x0 asm("x0") = a;
    register long x1 asm("x1") = b;
    register long x2 asm("x2") = c;
    asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
  }
};
#endif

// A userfaultfd, from the system call or, where that is refused (a kernel
// with it restricted), from /dev/userfaultfd. Returns the descriptor.
template <typename Sys>
long open(Sys sys) {
  long fd = sys(__NR_userfaultfd, kOpenFlags, 0, 0);
  if (fd >= 0 || (fd != -38 /* ENOSYS */ && fd != -1 /* EPERM */)) return fd;
  long dev = sys(__NR_openat, -100 /* AT_FDCWD */, reinterpret_cast<long>("/dev/userfaultfd"),
                 kOpenReadWrite | kOpenFlags);
  if (dev < 0) return fd;
  fd = sys(__NR_ioctl, dev, USERFAULTFD_IOC_NEW, kOpenFlags);
  sys(__NR_close, dev, 0, 0);
  return fd;
}

// The UFFDIO_API handshake asking for kFeatures. -EINVAL when the kernel
// lacks one of them (the pager cannot serve such a clone correctly).
template <typename Sys>
long api(Sys sys, int fd) {
  uffdio_api a{};
  a.api = UFFD_API;
  a.features = kFeatures;
  long r = sys(__NR_ioctl, fd, UFFDIO_API, reinterpret_cast<long>(&a));
  if (r < 0) return r;
  return (a.features & kFeatures) == kFeatures ? 0 : -22 /* EINVAL */;
}

// Registers [start, start + length) (page aligned, covered by mappings of
// anonymous memory) for missing faults. -EINVAL when the kernel would not
// let the pager resolve them with UFFDIO_COPY and UFFDIO_ZEROPAGE.
template <typename Sys>
long register_missing(Sys sys, int fd, unsigned long long start, unsigned long long length) {
  uffdio_register reg{};
  reg.range.start = start;
  reg.range.len = length;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  long r = sys(__NR_ioctl, fd, UFFDIO_REGISTER, reinterpret_cast<long>(&reg));
  if (r < 0) return r;
  constexpr unsigned long long kNeeded = (1ull << _UFFDIO_COPY) | (1ull << _UFFDIO_ZEROPAGE) | (1ull << _UFFDIO_WAKE);
  return (reg.ioctls & kNeeded) == kNeeded ? 0 : -22;
}

// The kernel's struct msghdr / cmsghdr for one descriptor on LP64, so that
// sending needs no libc header.
struct RawIovec {
  void* base;
  unsigned long len;
};
struct RawFdControl {
  unsigned long len;  // cmsg_len
  int level;          // SOL_SOCKET
  int type;           // SCM_RIGHTS
  int fd;
  int pad;
};
struct RawMsgHdr {
  void* name;
  int namelen;
  RawIovec* iov;
  unsigned long iovlen;
  void* control;
  unsigned long controllen;
  unsigned flags;
};

// Sends `fd` over the connected unix socket `sock` with an 8-byte tag (the
// pager's receive_uffd returns it, e.g. which clone this is). Returns the
// bytes sent (8).
template <typename Sys>
long send_fd(Sys sys, int sock, int fd, unsigned long long tag) {
  RawIovec iov{&tag, sizeof tag};
  RawFdControl ctl{};
  ctl.len = sizeof(unsigned long) + 2 * sizeof(int) + sizeof(int);  // CMSG_LEN(sizeof(int))
  ctl.level = 1;  // SOL_SOCKET
  ctl.type = 1;   // SCM_RIGHTS
  ctl.fd = fd;
  RawMsgHdr msg{};
  msg.iov = &iov;
  msg.iovlen = 1;
  msg.control = &ctl;
  msg.controllen = sizeof ctl;  // CMSG_SPACE(sizeof(int))
  return sys(__NR_sendmsg, sock, reinterpret_cast<long>(&msg), 0x4000 /* MSG_NOSIGNAL */);
}

}  // namespace cxlpool::ckpt::uffd_raw
