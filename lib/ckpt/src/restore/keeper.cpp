// SPDX-License-Identifier: Apache-2.0
// The keeper: pid 1 of the clone's pid namespace. It creates the clone with
// the target's pid, learns from the clone's status pipe whether the restore
// reached the target's code, tells the caller, and then lives as long as the
// clone: reaping it and exiting with its status. If the keeper dies, the
// kernel kills everything in its namespace, so a clone never outlives the
// one that serves it.
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "blob/blob_abi.hpp"
#include "clone_stage.hpp"
#include "cxlpool/ckpt/lazy_pager.hpp"
#include "cxlpool/ckpt/restorer.hpp"

namespace cxlpool::ckpt {
namespace {

// What the keeper tells start_clone's caller, once.
struct KeeperReport {
  uint32_t restored = 0;
  uint32_t failure = 0;
  int32_t error = 0;
  uint32_t pad = 0;
  uint64_t step = 0;
  int64_t restore_ns = 0;
  char message[1024] = {};
};

std::string_view failure_name(uint32_t f) {
  static constexpr std::array<std::string_view, 20> kNames = {
      "none", "moving the vDSO/vvar", "unmapping the restorer", "mapping a VMA", "copying pages",
      "mprotect", "the userfaultfd", "sending the userfaultfd", "madvise", "PR_SET_MM_MAP", "personality", "rt_sigaction",
      "prlimit", "setitimer", "queueing a pending signal", "creating a thread (clone3 set_tid)", "arch_prctl(SET_FS)",
      "registering rseq", "setting credentials", "naming a thread (PR_SET_NAME)"};
  if (f < kNames.size()) return kNames[f];
  if (f == static_cast<uint32_t>(blob::Failure::kStatus)) return "reporting the status";
  return "an unknown step";
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

long clone3_raw(clone_args* args) { return ::syscall(SYS_clone3, args, sizeof *args); }

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w, n -= static_cast<size_t>(w);
  }
}

size_t read_full(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

int exit_code(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 255;
}

// Writes the pager's fault order into the record descriptor once: after the
// recording time, or when the clone exited if that came first.
class FaultRecorder {
 public:
  FaultRecorder(const LazyPager& pager, int fd, int record_ms) : pager_(pager), fd_(fd) {
    if (record_ms > 0)
      thread_ = std::thread([this, record_ms] {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(record_ms), [this] { return done_; });
        write_locked();
      });
  }
  ~FaultRecorder() {
    {
      std::lock_guard lock(mu_);
      write_locked();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void write_locked() {
    if (done_) return;
    done_ = true;
    const std::vector<uint64_t> order = pager_.fault_order();  // x86-64: already little-endian
    const char* p = reinterpret_cast<const char*>(order.data());
    size_t left = order.size() * sizeof(uint64_t);
    off_t at = 0;
    while (left) {
      const ssize_t w = ::pwrite(fd_, p, left, at);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      p += w, at += w, left -= static_cast<size_t>(w);
    }
    (void)::ftruncate(fd_, at);
  }

  const LazyPager& pager_;
  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

[[noreturn]] void keeper_main(const Manifest& m, const RestorePlan& plan, int image_fd, int report_fd, int64_t start,
                              const CloneOptions& options) {
  if (!options.detach) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  KeeperReport report;
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    std::snprintf(report.message, sizeof report.message, "pipe: %s", std::strerror(errno));
    write_all(report_fd, &report, sizeof report);
    ::_exit(127);
  }
  std::vector<LazyRange> lazy;
  for (const RestoreStep& s : plan.steps)
    if (s.kind == StepKind::kUffd) lazy.push_back({s.addr, s.len, s.offset});
  int sock[2] = {-1, -1};
  if (!lazy.empty() && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) != 0) {
    std::snprintf(report.message, sizeof report.message, "socketpair: %s", std::strerror(errno));
    write_all(report_fd, &report, sizeof report);
    ::_exit(127);
  }
  // set_tid[0] is the pid in the new namespace, set_tid[1] the host's.
  pid_t tid[2] = {m.process.pid, m.process.pid};
  int pidfd = -1;
  clone_args ca{};
  ca.flags = CLONE_PIDFD;
  ca.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  ca.exit_signal = SIGCHLD;
  ca.set_tid = reinterpret_cast<uint64_t>(&tid[0]);
  ca.set_tid_size = options.host_pids ? 2 : 1;
  const long pid = clone3_raw(&ca);
  if (pid == 0) {
    ::close(status_pipe[0]);
    ::close(report_fd);
    if (sock[0] >= 0) ::close(sock[0]);
    CloneChannels ch{image_fd, status_pipe[1], sock[1], options.host_pids};
    run_clone_stage(m, plan, ch);
  }
  ::close(status_pipe[1]);
  if (sock[1] >= 0) ::close(sock[1]);
  // moa: the clone sends its userfaultfd before anything touches the ranges
  // it registered; the pager serves it on a thread of its own while this one
  // waits for the clone.
  std::unique_ptr<LazyPager> pager;
  std::thread pager_thread;
  if (pid > 0 && !lazy.empty()) {
    auto uffd = receive_uffd(sock[0]);
    // A recording copies exactly the pages touched, so that the hot set is
    // the working set and not the read-ahead around it.
    const bool recording = options.fault_record_fd >= 0;
    auto created = uffd ? LazyPager::create(image_fd, LazyPagerOptions{recording ? 1u : 16u, recording, false})
                        : Result<std::unique_ptr<LazyPager>>(tl::unexpected(uffd.error()));
    if (created) {
      pager = std::move(*created);
      auto client = pager->add_client(std::move(*uffd), lazy, UniqueFd(pidfd));
      pidfd = -1;
      if (client) pager_thread = std::thread([&pager] { (void)pager->run(); });
    }
    // Without a pager the clone's faults wait; its status (or its end) says why.
    if (!pager_thread.joinable()) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
  std::unique_ptr<FaultRecorder> recorder;
  if (pager && options.fault_record_fd >= 0)
    recorder = std::make_unique<FaultRecorder>(*pager, options.fault_record_fd, options.record_ms);
  if (pid < 0) {
    std::snprintf(report.message, sizeof report.message, "clone3 with pid %d%s: %s", m.process.pid,
                  options.host_pids ? " here and in the parent pid namespace" : "", std::strerror(errno));
    write_all(report_fd, &report, sizeof report);
    ::_exit(127);
  }
  blob::Status status{};
  const size_t got = read_full(status_pipe[0], &status, sizeof status);
  report.restore_ns = now_ns() - start;
  if (got == sizeof status && status.failure == 0) {
    report.restored = 1;
  } else if (got == sizeof status) {
    report.failure = status.failure;
    report.error = status.error;
    report.step = status.step;
    if (status.failure == kFailurePrepare) {
      read_full(status_pipe[0], report.message, sizeof report.message - 1);
    } else {
      std::snprintf(report.message, sizeof report.message, "the final stage failed at %s (step %lu): %s",
                    std::string(failure_name(status.failure)).c_str(), static_cast<unsigned long>(status.step),
                    std::strerror(status.error));
    }
  } else {
    int ws = 0;
    ::waitpid(static_cast<pid_t>(pid), &ws, 0);
    std::snprintf(report.message, sizeof report.message, "the clone ended before it was restored (status %d)",
                  exit_code(ws));
    write_all(report_fd, &report, sizeof report);
    ::_exit(127);
  }
  ::close(status_pipe[0]);
  write_all(report_fd, &report, sizeof report);
  ::close(report_fd);
  // Reap until the clone itself is gone; orphans of the namespace come here too.
  int code = 255;
  for (;;) {
    int ws = 0;
    const pid_t w = ::waitpid(-1, &ws, __WALL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) break;
    if (w == pid && (WIFEXITED(ws) || WIFSIGNALED(ws))) {
      code = exit_code(ws);
      break;
    }
  }
  recorder.reset();
  if (pager_thread.joinable()) {
    pager->stop();
    pager_thread.join();
  }
  ::_exit(code);
}

}  // namespace

Result<CloneHandle> start_clone(const Manifest& m, const RestorePlan& plan, int image_fd, bool detach) {
  CloneOptions options;
  options.detach = detach;
  return start_clone(m, plan, image_fd, options);
}

Result<CloneHandle> start_clone(const Manifest& m, const RestorePlan& plan, int image_fd, const CloneOptions& options) {
  const int64_t start = now_ns();
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return fail_errno("pipe");
  clone_args ca{};
  ca.flags = CLONE_NEWPID;
  ca.exit_signal = SIGCHLD;
  const long keeper = clone3_raw(&ca);
  if (keeper < 0) {
    const int e = errno;
    ::close(report[0]), ::close(report[1]);
    return fail(e, fmt::format("clone3(CLONE_NEWPID) for the keeper: {}", std::strerror(e)));
  }
  if (keeper == 0) {
    ::close(report[0]);
    keeper_main(m, plan, image_fd, report[1], start, options);
  }
  ::close(report[1]);
  return CloneHandle{static_cast<pid_t>(keeper), report[0]};
}

CloneReport wait_restored(CloneHandle& clone) {
  CloneReport out;
  KeeperReport r;
  const size_t got = read_full(clone.report_fd, &r, sizeof r);
  ::close(clone.report_fd);
  clone.report_fd = -1;
  if (got != sizeof r) {
    out.error = "the keeper ended before it reported";
    return out;
  }
  out.restored = r.restored != 0;
  out.restore_ms = static_cast<double>(r.restore_ns) / 1e6;
  r.message[sizeof r.message - 1] = 0;
  out.error = r.message;
  return out;
}

int wait_exit(CloneHandle& clone) {
  if (clone.report_fd >= 0) ::close(clone.report_fd), clone.report_fd = -1;
  int ws = 0;
  while (::waitpid(clone.keeper, &ws, 0) < 0) {
    if (errno != EINTR) return 255;
  }
  clone.keeper = -1;
  return exit_code(ws);
}

}  // namespace cxlpool::ckpt
