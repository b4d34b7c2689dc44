// SPDX-License-Identifier: Apache-2.0
// Processes a test starts besides the daemon: programs run to completion with
// their output captured (cxlpoolctl, a second cxlpoold), and forked children
// that act as independent clients, optionally as another user.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace cxlpool::integration {

// A user to switch to (supplementary groups dropped, then gid, then uid).
struct RunAs {
  uid_t uid = 65534;
  gid_t gid = 65534;
};

struct ProgramOptions {
  std::vector<std::string> env;    // extra "NAME=value" entries
  std::vector<std::string> unset;  // names removed from the environment
  std::optional<RunAs> run_as;
  std::chrono::milliseconds timeout{20000};
};

struct ProgramResult {
  int exit_code = -1;  // as decode_wait_status(); -1: timed out (killed)
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with argv and waits for it, capturing stdout/stderr.
// CXLPOOL_SOCKET is removed from the environment unless `env` sets it.
ProgramResult run_program(const std::vector<std::string>& argv, const ProgramOptions& options = {});

// A forked copy of this process that runs `body` and _exit()s with its
// return value; it writes to `report_fd`, which the parent reads. The
// destructor SIGKILLs it if it still runs (it is this object's own child).
class ForkedChild {
 public:
  ForkedChild(const std::function<int(int report_fd)>& body, std::optional<RunAs> run_as = {});
  ~ForkedChild();
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  pid_t pid() const { return pid_; }
  // One line from the child, without the newline; nullopt at EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Everything until EOF (or timeout).
  std::string read_all(std::chrono::milliseconds timeout);
  // Waits for the exit; as decode_wait_status(), -1 on timeout.
  int wait(std::chrono::milliseconds timeout);
  void kill(int sig) const;

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  bool reaped_ = false;
  int status_ = -1;
  std::string buffer_;
};

// Expectations checked inside a forked child and reported to the parent.
class ChildChecks {
 public:
  explicit ChildChecks(int report_fd) : fd_(report_fd) {}

  void expect(bool ok, const std::string& what, int line);
  template <typename A, typename B>
  void expect_eq(const A& actual, const B& expected, const char* what, int line) {
    if (actual == expected) return;
    std::ostringstream msg;
    msg << what << ": got " << actual << ", expected " << expected;
    expect(false, msg.str(), line);
  }
  bool ok() const { return ok_; }

 private:
  int fd_;
  bool ok_ = true;
};

#define CHILD_EXPECT(checks, cond) (checks).expect((cond), #cond, __LINE__)
#define CHILD_EXPECT_EQ(checks, actual, expected) \
  (checks).expect_eq((actual), (expected), #actual " == " #expected, __LINE__)

// Runs `body` in a forked child (as `run_as` when given) and returns the
// failures it reported, "" when all its checks passed and it exited 0.
std::string run_checks_in_child(const std::function<void(ChildChecks&)>& body,
                                std::optional<RunAs> run_as = {},
                                std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Decodes a waitpid() status: exit code, or 128 + signal number.
int decode_wait_status(int status);

}  // namespace cxlpool::integration
