// SPDX-License-Identifier: Apache-2.0
// A restored clone's stdin and stdout as pipes the test holds the other
// ends of (the clone speaks tests/ckpt_targets' "key value ... done" lines).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/ckpt_target_process.hpp"

namespace cxlpool::integration {

// A clone's stdin and stdout, as pipes the test holds the other ends of.
class ClonePipes {
 public:
  ClonePipes() {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) std::abort();
    clone_in_ = in[0], to_clone_ = in[1], from_clone_ = out[0], clone_out_ = out[1];
    null_ = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  }
  ~ClonePipes() {
    for (int fd : {clone_in_, to_clone_, from_clone_, clone_out_, null_}) {
      if (fd >= 0) ::close(fd);
    }
  }
  std::vector<int> stdio() const { return {clone_in_, clone_out_, null_}; }
  // The report the clone prints for "report", or an empty map.
  test::TargetReport report() { return ask("report"); }
  // Sends `command` and collects the "key value" lines up to "done".
  test::TargetReport ask(const std::string& command) {
    const std::string cmd = command + "\n";
    if (::write(to_clone_, cmd.data(), cmd.size()) != static_cast<ssize_t>(cmd.size())) return {};
    test::TargetReport r;
    for (;;) {
      const std::string line = read_line();
      if (line.empty() || line == "done") break;
      const size_t space = line.find(' ');
      if (space != std::string::npos) r[line.substr(0, space)] = line.substr(space + 1);
    }
    return r;
  }
  void exit_clone() { (void)!::write(to_clone_, "exit\n", 5); }

 private:
  std::string read_line() {
    std::string s;
    char c;
    for (;;) {
      pollfd p{from_clone_, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0 || ::read(from_clone_, &c, 1) != 1) return s;
      if (c == '\n') return s;
      s += c;
    }
  }
  int clone_in_ = -1, to_clone_ = -1, from_clone_ = -1, clone_out_ = -1, null_ = -1;
};

}  // namespace cxlpool::integration
