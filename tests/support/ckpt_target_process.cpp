// SPDX-License-Identifier: Apache-2.0
#include "support/ckpt_target_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace cxlpool::test {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

CkptTarget::CkptTarget(const std::string& program, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout) {
  // A target that died must fail the test's write, not kill the test.
  ::signal(SIGPIPE, SIG_IGN);
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return;
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return;
  }
  std::vector<std::string> argv_s{program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 2);
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  in_ = to_child[1];
  out_ = from_child[0];
  if (pid_ < 0) return;
  const auto deadline = Clock::now() + timeout;
  while (auto line = read_line(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()))) {
    if (*line == "ready") {
      started_ = true;
      return;
    }
    const auto space = line->find(' ');
    setup_[line->substr(0, space)] = space == std::string::npos ? "" : line->substr(space + 1);
  }
}

CkptTarget::~CkptTarget() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (in_ >= 0) ::close(in_);
  if (out_ >= 0) ::close(out_);
}

std::optional<std::string> CkptTarget::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<TargetReport> CkptTarget::report(std::chrono::milliseconds timeout) {
  if (::write(in_, "report\n", 7) != 7) return std::nullopt;
  TargetReport r;
  const auto deadline = Clock::now() + timeout;
  while (auto line = read_line(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()))) {
    if (*line == "done") return r;
    const auto space = line->find(' ');
    r[line->substr(0, space)] = space == std::string::npos ? "" : line->substr(space + 1);
  }
  return std::nullopt;
}

int CkptTarget::wait(std::chrono::milliseconds timeout) {
  if (reaped_) return -1;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return status;
    }
    if (r < 0 || Clock::now() >= deadline) return -1;
    ::usleep(2000);
  }
}

int CkptTarget::stop(std::chrono::milliseconds timeout) {
  (void)!::write(in_, "exit\n", 5);
  const int status = wait(timeout);
  if (status == -1 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }
  return status;
}

std::string ckpt_target_program(const char* name) {
  const char* path = std::getenv(name);
  return path ? path : "";
}

}  // namespace cxlpool::test
