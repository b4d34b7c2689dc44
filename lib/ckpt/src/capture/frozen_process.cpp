// SPDX-License-Identifier: Apache-2.0
#include "frozen_process.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>

namespace cxlpool::ckpt::detail {
namespace {

constexpr int kMaxSettleRounds = 100;

std::vector<pid_t> list_tasks(pid_t pid) {
  std::vector<pid_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  ::closedir(d);
  return out;
}

// Waits until a seized, interrupted thread reports its PTRACE_EVENT_STOP.
// A signal that arrives first is handed back to the thread (it runs its
// handler, as it would have without us), and the interrupt still stands.
Result<void> wait_for_interrupt(pid_t tid) {
  for (;;) {
    int status = 0;
    if (::waitpid(tid, &status, __WALL) < 0) {
      if (errno == EINTR) continue;
      return fail_errno("checkpoint: wait for thread " + std::to_string(tid) + " to stop");
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      return fail(ESRCH, "checkpoint: thread " + std::to_string(tid) + " exited while being stopped");
    }
    if (!WIFSTOPPED(status)) continue;
    if ((status >> 16) == PTRACE_EVENT_STOP) return {};
    // A signal-delivery-stop: deliver the signal and wait on.
    if (::ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(WSTOPSIG(status)))) != 0) {
      return fail_errno("checkpoint: resume thread " + std::to_string(tid) + " with its signal");
    }
  }
}

// Field 4 of /proc/PID/stat; -1 when unreadable.
pid_t parent_of(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (f == nullptr) return -1;
  char buf[1024];
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  char state = 0;
  int ppid = -1;
  if (close == nullptr || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

}  // namespace

Result<bool> FrozenProcess::seize_new_threads() {
  bool added = false;
  for (pid_t tid : list_tasks(pid_)) {
    if (std::find(tids_.begin(), tids_.end(), tid) != tids_.end()) continue;
    if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
      if (errno == ESRCH && tid != pid_) continue;  // exited since the listing
      return fail_errno("checkpoint: PTRACE_SEIZE of " + std::to_string(tid) +
                        (tid == pid_ ? "" : " (a thread of " + std::to_string(pid_) + ")"));
    }
    tids_.push_back(tid);
    added = true;
    if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
      return fail_errno("checkpoint: PTRACE_INTERRUPT of " + std::to_string(tid));
    }
    if (auto w = wait_for_interrupt(tid); !w) {
      tids_.pop_back();
      if (tid == pid_) return tl::unexpected(w.error());
    }
  }
  return added;
}

Result<FrozenProcess> FrozenProcess::freeze(pid_t pid) {
  if (pid <= 0) return fail(ESRCH, "checkpoint: no process " + std::to_string(pid));
  FrozenProcess p(pid);
  if (list_tasks(pid).empty()) return fail(ESRCH, "checkpoint: no process " + std::to_string(pid));
  // A thread that is running can still create threads; the list is stable
  // once a round finds nothing new with every listed thread stopped.
  for (int round = 0; round < kMaxSettleRounds; ++round) {
    auto added = p.seize_new_threads();
    if (!added) return tl::unexpected(added.error());
    if (!*added) {
      auto leader = std::find(p.tids_.begin(), p.tids_.end(), pid);
      if (leader == p.tids_.end()) return fail(ESRCH, "checkpoint: process " + std::to_string(pid) + " is gone");
      std::rotate(p.tids_.begin(), leader, leader + 1);
      return p;
    }
  }
  return fail(EAGAIN, "checkpoint: the threads of " + std::to_string(pid) + " did not settle (creating threads too fast)");
}

void FrozenProcess::release() {
  for (pid_t tid : tids_) ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  tids_.clear();
}

void FrozenProcess::kill() {
  // When the caller is also the parent, its own wait reaps the leader; the
  // tracer's wait here must leave the zombie for it.
  const bool our_child = parent_of(pid_) == ::getpid();
  ::kill(pid_, SIGKILL);
  // The leader's exit is reported only once its threads are reaped: they
  // go first.
  for (auto it = tids_.rbegin(); it != tids_.rend(); ++it) {
    const pid_t tid = *it;
    if (tid == pid_ && our_child) {
      siginfo_t info{};
      ::waitid(P_PID, static_cast<id_t>(tid), &info, WEXITED | WNOWAIT | __WALL);
      continue;
    }
    int status = 0;
    while (::waitpid(tid, &status, __WALL) >= 0 && !WIFEXITED(status) && !WIFSIGNALED(status)) {
    }
  }
  tids_.clear();
}

}  // namespace cxlpool::ckpt::detail
