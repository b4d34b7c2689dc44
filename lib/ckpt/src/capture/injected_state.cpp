// SPDX-License-Identifier: Apache-2.0
// State no /proc file or ptrace request shows, asked for by the process
// itself through injected system calls.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cstring>

#include "capture_steps.hpp"
#include "remote_syscall.hpp"

namespace cxlpool::ckpt::detail {
namespace {

template <class T>
Result<T> read_as(const RemoteSyscall& call, uint64_t addr) {
  T value{};
  auto bytes = std::as_writable_bytes(std::span(&value, 1));
  if (auto r = call.read_scratch(addr, bytes); !r) return tl::unexpected(r.error());
  return value;
}

tl::unexpected<Error> syscall_failed(const char* what, pid_t tid, int64_t rc) {
  const int code = static_cast<int>(-rc);
  return fail(code, errno_message("checkpoint: " + std::string(what) + " in thread " + std::to_string(tid), code));
}

// The kernel's struct sigaction for rt_sigaction (not glibc's).
struct KernelSigaction {
  uint64_t handler, flags, restorer, mask;
};

struct KernelItimerval {
  int64_t interval_sec, interval_usec, value_sec, value_usec;
};

struct KernelStack {
  uint64_t sp;
  int32_t flags;
  int32_t pad;
  uint64_t size;
};

Result<void> process_wide(RemoteSyscall& call, pid_t tid, Manifest& m) {
  const uint64_t out = call.scratch();
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    auto rc = call.run(SYS_rt_sigaction, static_cast<uint64_t>(sig), 0, out, 8);
    if (!rc) return tl::unexpected(rc.error());
    if (*rc == -EINVAL) continue;  // a signal number the kernel does not have
    if (*rc < 0) return syscall_failed("rt_sigaction", tid, *rc);
    auto act = read_as<KernelSigaction>(call, out);
    if (!act) return tl::unexpected(act.error());
    m.process.sigactions[sig - 1] = {act->handler, act->flags, act->restorer, act->mask};
  }
  ITimer* timers[] = {&m.process.itimer_real, &m.process.itimer_virtual, &m.process.itimer_prof};
  for (int which = 0; which < 3; ++which) {
    auto rc = call.run(SYS_getitimer, static_cast<uint64_t>(which), out);
    if (!rc) return tl::unexpected(rc.error());
    if (*rc < 0) return syscall_failed("getitimer", tid, *rc);
    auto t = read_as<KernelItimerval>(call, out);
    if (!t) return tl::unexpected(t.error());
    timers[which]->interval_us = static_cast<uint64_t>(t->interval_sec * 1000000 + t->interval_usec);
    timers[which]->value_us = static_cast<uint64_t>(t->value_sec * 1000000 + t->value_usec);
  }
  auto brk = call.run(SYS_brk, 0);
  if (!brk) return tl::unexpected(brk.error());
  m.process.mm.brk = static_cast<uint64_t>(*brk);
  return {};
}

Result<void> per_thread(RemoteSyscall& call, ThreadState& t) {
  const uint64_t out = call.scratch();
  auto rc = call.run(SYS_prctl, PR_GET_TID_ADDRESS, out);
  if (!rc) return tl::unexpected(rc.error());
  if (*rc < 0) return syscall_failed("prctl(PR_GET_TID_ADDRESS)", t.tid, *rc);
  auto tid_address = read_as<uint64_t>(call, out);
  if (!tid_address) return tl::unexpected(tid_address.error());
  t.clear_child_tid = *tid_address;
  rc = call.run(SYS_sigaltstack, 0, out);
  if (!rc) return tl::unexpected(rc.error());
  if (*rc < 0) return syscall_failed("sigaltstack", t.tid, *rc);
  auto stack = read_as<KernelStack>(call, out);
  if (!stack) return tl::unexpected(stack.error());
  t.altstack = {stack->sp, stack->size, stack->flags};
  return {};
}

}  // namespace

Result<void> capture_injected(const FrozenProcess& frozen, uint64_t syscall_insn, Manifest& m) {
  for (std::size_t i = 0; i < frozen.tids().size(); ++i) {
    const pid_t tid = frozen.tids()[i];
    RemoteSyscall call(tid, syscall_insn);
    if (auto b = call.begin(); !b) return b;
    if (i == 0) {
      if (auto r = process_wide(call, tid, m); !r) return r;
    }
    if (auto r = per_thread(call, m.threads[i]); !r) return r;
    if (auto e = call.end(); !e) return e;
  }
  return {};
}

}  // namespace cxlpool::ckpt::detail
