// SPDX-License-Identifier: Apache-2.0
// A program run with its stdin and its stdout+stderr on pipes the test
// holds, and optionally fd 3 on a third (a --report-fd): for talking to a
// checkpoint target or a restorer line by line. Nothing else this process
// has open is inherited (a checkpoint would refuse a stray pipe).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace cxlpool::test {

class PipedChild {
 public:
  // fork + execv(argv[0]); pid() <= 0 when that failed.
  PipedChild(const std::vector<std::string>& argv, bool with_fd3);
  ~PipedChild() { stop(); }
  PipedChild(const PipedChild&) = delete;
  PipedChild& operator=(const PipedChild&) = delete;

  pid_t pid() const { return pid_; }
  // Closes the pipes, SIGKILLs the child if it runs and reaps it.
  void stop();
  // Its exit status (128 + signal for a signal); -1 when it had not ended
  // within timeout_ms (it is then killed).
  int wait_exit(int timeout_ms);
  // Writes line + "\n" to its stdin.
  bool send(const std::string& line);
  // The next line of its output, "" after timeout_ms or at its end (*ended).
  std::string line(int timeout_ms, bool* ended = nullptr) { return read_line(out_, out_buffer_, timeout_ms, ended); }
  // The next line from its fd 3.
  std::string fd3_line(int timeout_ms) { return read_line(fd3_, fd3_buffer_, timeout_ms, nullptr); }

 private:
  static std::string read_line(int fd, std::string& buffered, int timeout_ms, bool* ended);

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, fd3_ = -1;
  std::string out_buffer_, fd3_buffer_;
};

}  // namespace cxlpool::test
