// SPDX-License-Identifier: Apache-2.0
// What ptrace reads of a stopped thread.
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "capture_steps.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"

namespace cxlpool::ckpt::detail {
namespace {

std::string who(pid_t tid) { return "thread " + std::to_string(tid); }

// Siginfos pending for the thread (flags 0) or the process (SHARED).
Result<std::vector<std::array<uint8_t, 128>>> peek_siginfo(pid_t tid, uint32_t flags) {
  std::vector<std::array<uint8_t, 128>> out;
  for (;;) {
    __ptrace_peeksiginfo_args args{};
    args.off = out.size();
    args.flags = flags;
    args.nr = 16;
    std::array<std::array<uint8_t, 128>, 16> batch{};
    const long n = ::ptrace(PTRACE_PEEKSIGINFO, tid, &args, batch.data());
    if (n < 0) return fail_errno("checkpoint: pending signals of " + who(tid));
    out.insert(out.end(), batch.begin(), batch.begin() + n);
    if (n < args.nr) return out;
  }
}

}  // namespace

Result<ThreadState> capture_thread(pid_t pid, pid_t tid) {
  ThreadState t;
  t.tid = tid;
  auto comm = read_proc(pid, "task/" + std::to_string(tid) + "/comm");
  if (!comm) return tl::unexpected(comm.error());
  // The kernel ends the name with a newline; the name itself may hold one.
  if (!comm->empty() && comm->back() == '\n') comm->pop_back();
  t.name = comm->substr(0, kMaxThreadNameBytes);
  user_regs_struct regs{};
  static_assert(sizeof regs == kRegsBytes);
  iovec iov{&regs, sizeof regs};
  if (::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
    return fail_errno("checkpoint: registers of " + who(tid));
  }
  const auto* r = reinterpret_cast<const uint8_t*>(&regs);
  t.regs.assign(r, r + sizeof regs);
  t.xsave.resize(kMaxXsaveBytes);
  iovec xiov{t.xsave.data(), t.xsave.size()};
  if (::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_X86_XSTATE), &xiov) != 0) {
    return fail_errno("checkpoint: xsave area of " + who(tid));
  }
  t.xsave.resize(xiov.iov_len);
  if (::ptrace(PTRACE_GETSIGMASK, tid, reinterpret_cast<void*>(sizeof t.sigmask), &t.sigmask) != 0) {
    return fail_errno("checkpoint: signal mask of " + who(tid));
  }
  auto pending = peek_siginfo(tid, 0);
  if (!pending) return tl::unexpected(pending.error());
  t.pending = std::move(*pending);
  __ptrace_rseq_configuration rseq{};
  if (::ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, reinterpret_cast<void*>(sizeof rseq),
               &rseq) < 0) {
    return fail_errno("checkpoint: rseq registration of " + who(tid));
  }
  t.rseq = {rseq.rseq_abi_pointer, rseq.rseq_abi_pointer ? rseq.rseq_abi_size : 0,
            rseq.rseq_abi_pointer ? rseq.signature : 0};
  return t;
}

Result<void> capture_shared_pending(pid_t tid, ProcessState& process) {
  auto pending = peek_siginfo(tid, PTRACE_PEEKSIGINFO_SHARED);
  if (!pending) return tl::unexpected(pending.error());
  process.shared_pending = std::move(*pending);
  return {};
}

}  // namespace cxlpool::ckpt::detail
