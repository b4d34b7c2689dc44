// SPDX-License-Identifier: Apache-2.0
// A running tests/ckpt_targets/ckpt_target: started with its stdin and
// stdout on pipes, stderr on /dev/null and no other descriptors, so that a
// checkpoint sees only what the mode set up. Its "key value" lines are
// collected until "ready"; report() asks for a fresh report.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cxlpool::test {

using TargetReport = std::map<std::string, std::string>;

class CkptTarget {
 public:
  // Starts `program` with `args` (the mode first) and waits for "ready".
  // started() is false when it exited or said nothing within the timeout.
  CkptTarget(const std::string& program, const std::vector<std::string>& args,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~CkptTarget();
  CkptTarget(const CkptTarget&) = delete;
  CkptTarget& operator=(const CkptTarget&) = delete;

  bool started() const { return started_; }
  pid_t pid() const { return pid_; }
  // The lines printed before "ready" (the last value of a repeated key).
  const TargetReport& setup() const { return setup_; }
  // Sends "report" and collects the lines up to "done"; nullopt when the
  // process does not answer (stopped, dead) within the timeout.
  std::optional<TargetReport> report(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Sends "exit" and waits; the wait status, or -1 after a timeout (killed).
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Waits for the exit of a process something else ended (a checkpoint
  // with --kill); the wait status, or -1 on timeout.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  bool started_ = false;
  bool reaped_ = false;
  std::string buffer_;
  TargetReport setup_;
};

// The program's path from environment variable `name` (meson sets it), or "".
std::string ckpt_target_program(const char* name = "CXLPOOL_CKPT_TARGET");

}  // namespace cxlpool::test
