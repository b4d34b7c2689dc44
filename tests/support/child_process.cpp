// SPDX-License-Identifier: Apache-2.0
#include "child_process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "process_env.hpp"

namespace cxlpool::integration {
namespace {

using Clock = std::chrono::steady_clock;

// Between fork and exec/body: no allocation, only system calls.
bool drop_privileges(const RunAs& who) {
  return ::setgroups(0, nullptr) == 0 && ::setgid(who.gid) == 0 && ::setuid(who.uid) == 0;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

int wait_for(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return decode_wait_status(status);
    if (r < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

ProgramResult run_program(const std::vector<std::string>& argv_in, const ProgramOptions& options) {
  ProgramResult result;
  std::vector<std::string> args = argv_in;
  auto argv = to_argv(args);
  ProcessEnv env;
  env.unset("CXLPOOL_SOCKET");
  for (const auto& name : options.unset) env.unset(name);
  for (const auto& entry : options.env) env.set(entry);
  auto envp = env.envp();

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("pipe2: ") + std::strerror(errno);
    return result;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (options.run_as && !drop_privileges(*options.run_as)) ::_exit(126);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close_range(3, ~0u, 0);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  const auto deadline = Clock::now() + options.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  while (open_count > 0 && Clock::now() < deadline) {
    const int n = ::poll(fds, 2, remaining_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  if (pid < 0) return result;
  result.exit_code = wait_for(pid, deadline);
  if (result.exit_code < 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  return result;
}

ForkedChild::ForkedChild(const std::function<int(int)>& body, std::optional<RunAs> run_as) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(p[0]);
    if (run_as && !drop_privileges(*run_as)) ::_exit(126);
    int rc = 125;
    try {
      rc = body(p[1]);
    } catch (...) {
    }
    ::_exit(rc);
  }
  ::close(p[1]);
  read_fd_ = p[0];
}

ForkedChild::~ForkedChild() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (read_fd_ >= 0) ::close(read_fd_);
}

void ForkedChild::kill(int sig) const {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

std::optional<std::string> ForkedChild::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (read_fd_ < 0) return std::nullopt;
    pollfd pfd{read_fd_, POLLIN, 0};
    const int n = ::poll(&pfd, 1, remaining_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t got = ::read(read_fd_, buf, sizeof buf);
    if (got <= 0) {
      ::close(read_fd_);
      read_fd_ = -1;
      continue;
    }
    buffer_.append(buf, static_cast<size_t>(got));
  }
}

std::string ForkedChild::read_all(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string out;
  while (auto line = read_line(std::chrono::milliseconds(remaining_ms(deadline)))) out += *line + "\n";
  out += buffer_;
  buffer_.clear();
  return out;
}

int ForkedChild::wait(std::chrono::milliseconds timeout) {
  if (reaped_) return status_;
  if (pid_ <= 0) return -1;
  status_ = wait_for(pid_, Clock::now() + timeout);
  reaped_ = status_ >= 0;
  return status_;
}

void ChildChecks::expect(bool ok, const std::string& what, int line) {
  if (ok) return;
  ok_ = false;
  const std::string msg = "child check failed (line " + std::to_string(line) + "): " + what + "\n";
  (void)!::write(fd_, msg.data(), msg.size());
}

std::string run_checks_in_child(const std::function<void(ChildChecks&)>& body, std::optional<RunAs> run_as,
                                std::chrono::milliseconds timeout) {
  ForkedChild child(
      [&](int fd) {
        ChildChecks checks(fd);
        body(checks);
        return checks.ok() ? 0 : 1;
      },
      run_as);
  if (child.pid() < 0) return "fork failed";
  std::string failures = child.read_all(timeout);
  const int status = child.wait(std::chrono::seconds(5));
  if (status != 0 && failures.empty()) {
    failures = "child exited with " + std::to_string(status) +
               (status == 126 ? " (could not switch user)" : "") + "\n";
  }
  return failures;
}

}  // namespace cxlpool::integration
