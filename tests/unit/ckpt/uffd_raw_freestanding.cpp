// SPDX-License-Identifier: Apache-2.0
// uffd_raw.hpp as the restorer's last stage uses it: a program linked
// without libc (-nostdlib -static, its own _start) that creates a
// userfaultfd, negotiates the pager's features, registers anonymous memory
// and sends the descriptor over a socketpair, then receives it back. It
// links only if the header needs nothing but the memset/memcpy given here.
// Exit 77 (skip) where userfaultfd is unavailable.
#include "cxlpool/ckpt/uffd_raw.hpp"

namespace raw = cxlpool::ckpt::uffd_raw;

extern "C" {
// What a freestanding caller provides: the compiler may emit calls to these.
void* memset(void* dst, int c, unsigned long n) {
  auto* p = static_cast<volatile unsigned char*>(dst);
  while (n-- > 0) *p++ = static_cast<unsigned char>(c);
  return dst;
}
void* memcpy(void* dst, const void* src, unsigned long n) {
  auto* d = static_cast<volatile unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  while (n-- > 0) *d++ = *s++;
  return dst;
}
}

namespace {

long syscall6(long nr, long a, long b, long c, long d, long e, long f) {
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  long ret;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
}

[[noreturn]] void exit_group(int code) {
  raw::RawSyscall{}(__NR_exit_group, code, 0, 0);
  __builtin_unreachable();
}

}  // namespace

extern "C" [[noreturn]] void freestanding_main() {
  raw::RawSyscall sys;
  long fd = raw::open(sys);
  if (fd < 0) exit_group(77);
  if (raw::api(sys, static_cast<int>(fd)) < 0) exit_group(1);
  constexpr long kLength = 4 * 4096;
  long mem = syscall6(__NR_mmap, 0, kLength, 3 /* PROT_READ | PROT_WRITE */, 0x22 /* MAP_PRIVATE | MAP_ANONYMOUS */,
                      -1, 0);
  if (mem < 0 && mem > -4096) exit_group(2);
  if (raw::register_missing(sys, static_cast<int>(fd), static_cast<unsigned long long>(mem), kLength) < 0)
    exit_group(3);
  int sv[2];
  if (syscall6(__NR_socketpair, 1 /* AF_UNIX */, 1 /* SOCK_STREAM */, 0, reinterpret_cast<long>(sv), 0, 0) < 0)
    exit_group(4);
  if (raw::send_fd(sys, sv[0], static_cast<int>(fd), 0x1234) != 8) exit_group(5);
  // Receive it back with the same raw layout: the descriptor must arrive.
  unsigned long long tag = 0;
  raw::RawIovec iov{&tag, sizeof tag};
  raw::RawFdControl ctl{};
  ctl.fd = -1;
  raw::RawMsgHdr msg{};
  msg.iov = &iov;
  msg.iovlen = 1;
  msg.control = &ctl;
  msg.controllen = sizeof ctl;
  if (syscall6(__NR_recvmsg, sv[1], reinterpret_cast<long>(&msg), 0, 0, 0, 0) != 8) exit_group(6);
  if (tag != 0x1234 || ctl.level != 1 || ctl.type != 1 || ctl.fd < 0 || ctl.fd == fd) exit_group(7);
  exit_group(0);
}

asm(".text\n"
    ".globl _start\n"
    "_start:\n"
    "  xor %ebp, %ebp\n"
    "  and $-16, %rsp\n"
    "  call freestanding_main\n"
    "  hlt\n");
