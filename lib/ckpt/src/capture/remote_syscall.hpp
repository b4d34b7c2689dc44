// SPDX-License-Identifier: Apache-2.0
// Runs one system call inside a stopped thread of the target, for state
// only the process itself can ask the kernel for (sigaction, getitimer,
// sigaltstack, PR_GET_TID_ADDRESS, brk). The thread's registers point at a
// `syscall` instruction found in the target's [vdso], it is single-stepped
// over it with every signal blocked, and its registers and signal mask are
// put back. Results written to memory land in a scratch area below the
// thread's stack pointer and red zone, which holds nothing live.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt::detail {

class RemoteSyscall {
 public:
  // `syscall_insn`: the target address of a 0f 05 pair (find_syscall_insn).
  RemoteSyscall(pid_t tid, uint64_t syscall_insn) : tid_(tid), insn_(syscall_insn) {}

  // Saves the thread's registers and signal mask; call before run().
  Result<void> begin();
  // The syscall's return value (negative errno as the kernel returns it).
  Result<int64_t> run(long nr, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0);
  // Restores registers and signal mask. Also done by the destructor.
  Result<void> end();
  ~RemoteSyscall() { (void)end(); }

  // A scratch area of 1 KiB below the stack pointer's red zone, and reading
  // it back after a syscall wrote there.
  uint64_t scratch() const;
  Result<void> read_scratch(uint64_t addr, std::span<std::byte> out) const;

 private:
  pid_t tid_;
  uint64_t insn_;
  bool saved_ = false;
  user_regs_struct regs_{};
  uint64_t sigmask_ = 0;
};

// The address of a `syscall` instruction in the [vdso] mapping [start, end)
// of process pid; ENOTSUP without one.
Result<uint64_t> find_syscall_insn(pid_t pid, uint64_t vdso_start, uint64_t vdso_end);

}  // namespace cxlpool::ckpt::detail
