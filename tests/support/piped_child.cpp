// SPDX-License-Identifier: Apache-2.0
#include "piped_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace cxlpool::test {

PipedChild::PipedChild(const std::vector<std::string>& argv, bool with_fd3) {
  int in[2], out[2], fd3[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0) return;
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return;
  }
  if (with_fd3 && ::pipe2(fd3, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    return;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    if (with_fd3) {
      // dup2 onto the same number would keep O_CLOEXEC.
      if (fd3[1] == 3) {
        ::fcntl(3, F_SETFD, 0);
      } else {
        ::dup2(fd3[1], 3);
      }
    }
    ::syscall(SYS_close_range, with_fd3 ? 4u : 3u, ~0u, 0u);
    ::execv(args[0], args.data());
    std::_Exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  if (with_fd3) ::close(fd3[1]);
  in_ = in[1];
  out_ = out[0];
  fd3_ = fd3[0];
  if (pid_ < 0) stop();
}

void PipedChild::stop() {
  for (int* fd : {&in_, &out_, &fd3_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

int PipedChild::wait_exit(int timeout_ms) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      stop();
      return -1;
    }
    ::usleep(10'000);
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool PipedChild::send(const std::string& line) {
  const std::string text = line + "\n";
  return in_ >= 0 && ::write(in_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

std::string PipedChild::read_line(int fd, std::string& buffered, int timeout_ms, bool* ended) {
  if (ended != nullptr) *ended = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (const size_t nl = buffered.find('\n'); nl != std::string::npos) {
      std::string line = buffered.substr(0, nl);
      buffered.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (fd < 0 || left <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return "";
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) {
      if (ended != nullptr) *ended = true;
      return "";
    }
    buffered.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace cxlpool::test
