// SPDX-License-Identifier: Apache-2.0
// Every thread of a process held still with ptrace: seized and interrupted
// until /proc/PID/task lists no thread that is not stopped. Letting go
// (destruction or release) detaches them all, so every way out of a capture
// leaves the process running.
#pragma once

#include <sys/types.h>

#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt::detail {

class FrozenProcess {
 public:
  // EPERM / ESRCH from PTRACE_SEIZE; the thread list not settling.
  static Result<FrozenProcess> freeze(pid_t pid);

  FrozenProcess(FrozenProcess&& other) noexcept : pid_(other.pid_), tids_(std::move(other.tids_)) { other.tids_.clear(); }
  FrozenProcess& operator=(FrozenProcess&&) = delete;
  FrozenProcess(const FrozenProcess&) = delete;
  ~FrozenProcess() { release(); }

  pid_t pid() const { return pid_; }
  // The leader first, then the other threads in /proc's order.
  const std::vector<pid_t>& tids() const { return tids_; }

  // Detaches every thread, leaving it to run on.
  void release();
  // SIGKILL while stopped, then waits for each thread's exit notification
  // (a tracer must collect them before the parent can reap the process).
  void kill();

 private:
  explicit FrozenProcess(pid_t pid) : pid_(pid) {}
  Result<bool> seize_new_threads();

  pid_t pid_;
  std::vector<pid_t> tids_;
};

}  // namespace cxlpool::ckpt::detail
