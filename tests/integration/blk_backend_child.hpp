// SPDX-License-Identifier: Apache-2.0
// cxlpool-devpool-blk as a child process of a test: started with `args`
// (argv[0] the program), its stdout read until it prints "ready".
#pragma once

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/environment.hpp"

namespace cxlpool::integration {

// The program named by environment variable `env` (meson sets it), else `fallback` on PATH.
inline std::string binary(const char* env, const char* fallback) {
  const std::string set = test::env_value(env);
  return set.empty() ? fallback : set;
}

class BlkBackendChild {
 public:
  explicit BlkBackendChild(std::vector<std::string> args) {
    child_ = std::make_unique<ForkedChild>([args](int report_fd) {
      ::dup2(report_fd, STDOUT_FILENO);
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      return 127;
    });
    for (;;) {
      auto line = child_->read_line(std::chrono::seconds(10));
      if (!line) break;
      banner_ += *line + "\n";
      if (*line == "ready") {
        ready_ = true;
        break;
      }
    }
  }
  bool ready() const { return ready_; }
  const std::string& banner() const { return banner_; }
  void kill(int sig) { child_->kill(sig); }
  int wait() { return child_->wait(std::chrono::seconds(10)); }
  // SIGTERM, then everything it printed after "ready".
  std::string stop() {
    child_->kill(SIGTERM);
    std::string rest = child_->read_all(std::chrono::seconds(10));
    child_->wait(std::chrono::seconds(10));
    return rest;
  }

 private:
  std::unique_ptr<ForkedChild> child_;
  std::string banner_;
  bool ready_ = false;
};

}  // namespace cxlpool::integration
