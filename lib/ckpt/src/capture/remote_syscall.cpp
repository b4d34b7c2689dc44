// SPDX-License-Identifier: Apache-2.0
#include "remote_syscall.hpp"

#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <string>
#include <vector>

namespace cxlpool::ckpt::detail {
namespace {

constexpr uint64_t kRedZone = 128;
constexpr uint64_t kScratchBytes = 1024;

std::string who(pid_t tid) { return "thread " + std::to_string(tid); }

Result<void> set_regs(pid_t tid, const user_regs_struct& regs) {
  iovec iov{const_cast<user_regs_struct*>(&regs), sizeof regs};
  if (::ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
    return fail_errno("checkpoint: set registers of " + who(tid));
  }
  return {};
}

Result<void> set_sigmask(pid_t tid, uint64_t mask) {
  if (::ptrace(PTRACE_SETSIGMASK, tid, reinterpret_cast<void*>(sizeof mask), &mask) != 0) {
    return fail_errno("checkpoint: set signal mask of " + who(tid));
  }
  return {};
}

}  // namespace

Result<void> RemoteSyscall::begin() {
  iovec iov{&regs_, sizeof regs_};
  if (::ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
    return fail_errno("checkpoint: registers of " + who(tid_));
  }
  if (::ptrace(PTRACE_GETSIGMASK, tid_, reinterpret_cast<void*>(sizeof sigmask_), &sigmask_) != 0) {
    return fail_errno("checkpoint: signal mask of " + who(tid_));
  }
  saved_ = true;
  // No signal handler may run in the middle of an injected call; the
  // signals stay pending and are delivered after the detach.
  return set_sigmask(tid_, ~0ull);
}

Result<int64_t> RemoteSyscall::run(long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  if (!saved_) return fail(EINVAL, "checkpoint: remote syscall before begin()");
  user_regs_struct r = regs_;
  r.rip = insn_;
  r.rax = static_cast<uint64_t>(nr);
  // orig_rax -1: the kernel must not take these registers for a syscall to
  // restart (the thread may have been stopped inside one).
  r.orig_rax = ~0ull;
  r.rdi = a1;
  r.rsi = a2;
  r.rdx = a3;
  r.r10 = a4;
  if (auto s = set_regs(tid_, r); !s) return tl::unexpected(s.error());
  if (::ptrace(PTRACE_SINGLESTEP, tid_, nullptr, nullptr) != 0) return fail_errno("checkpoint: single-step " + who(tid_));
  int status = 0;
  for (;;) {
    if (::waitpid(tid_, &status, __WALL) < 0) {
      if (errno == EINTR) continue;
      return fail_errno("checkpoint: wait for " + who(tid_));
    }
    break;
  }
  if (!WIFSTOPPED(status)) return fail(ESRCH, "checkpoint: " + who(tid_) + " died in an injected syscall");
  iovec iov{&r, sizeof r};
  if (::ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
    return fail_errno("checkpoint: registers of " + who(tid_));
  }
  if (WSTOPSIG(status) != SIGTRAP || r.rip != insn_ + 2) {
    return fail(EIO, "checkpoint: injected syscall " + std::to_string(nr) + " in " + who(tid_) +
                         " stopped with signal " + std::to_string(WSTOPSIG(status)) + " instead of a step");
  }
  return static_cast<int64_t>(r.rax);
}

Result<void> RemoteSyscall::end() {
  if (!saved_) return {};
  saved_ = false;
  auto regs = set_regs(tid_, regs_);
  auto mask = set_sigmask(tid_, sigmask_);
  return regs ? mask : regs;
}

uint64_t RemoteSyscall::scratch() const { return (regs_.rsp - kRedZone - kScratchBytes) & ~15ull; }

Result<void> RemoteSyscall::read_scratch(uint64_t addr, std::span<std::byte> out) const {
  iovec local{out.data(), out.size()};
  iovec remote{reinterpret_cast<void*>(addr), out.size()};
  if (::process_vm_readv(tid_, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(out.size())) {
    return fail_errno("checkpoint: read the scratch area of " + who(tid_));
  }
  return {};
}

Result<uint64_t> find_syscall_insn(pid_t pid, uint64_t start, uint64_t end) {
  std::vector<uint8_t> code(end - start);
  iovec local{code.data(), code.size()};
  iovec remote{reinterpret_cast<void*>(start), code.size()};
  if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(code.size())) {
    return fail_errno("checkpoint: read the [vdso] of " + std::to_string(pid));
  }
  for (std::size_t i = 0; i + 1 < code.size(); ++i) {
    if (code[i] == 0x0f && code[i + 1] == 0x05) return start + i;
  }
  return fail(ENOTSUP, "checkpoint: no syscall instruction in the [vdso] of " + std::to_string(pid));
}

}  // namespace cxlpool::ckpt::detail
