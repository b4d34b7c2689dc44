// SPDX-License-Identifier: Apache-2.0
// A real cxlpoold in a private temporary state directory: started with
// fork/exec from the binary the build produced, stopped with SIGTERM. When the
// test has failed, its log is printed. Only this object's own child is ever
// signalled.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace cxlpool::integration {

// Paths of the programs under test, from CXLPOOL_DAEMON / CXLPOOL_CTL (set by
// the test's meson definition). Empty, with a test failure, when unset.
std::string daemon_binary();
std::string ctl_binary();

struct DaemonStartOptions {
  std::vector<std::string> env;    // extra "NAME=value" entries for the daemon
  bool watchdog_pid_self = false;  // WATCHDOG_PID = the daemon's own pid (known only after fork)
  std::string netns;               // run it in this network namespace (/run/netns/NAME); "" the test's own
  // Runs it with this RLIMIT_MEMLOCK and without CAP_IPC_LOCK (dropped from
  // its bounding and inheritable sets before exec), which would otherwise
  // exempt a root daemon from the limit: as a daemon started by a service
  // manager with a memlock limit and no such capability.
  std::optional<uint64_t> memlock_limit_bytes;
};

class DaemonProcess;

// Runs `cxlpoold --check-config` on `toml` (written into dir's state
// directory) and checks that it fails naming `where` ("file:line: key:").
testing::AssertionResult config_rejected(const DaemonProcess& dir, const std::string& toml, const std::string& where);

// One config `cxlpoold --check-config` must refuse, and the "file:line: key:"
// (or part of it) its error must name.
struct RejectedConfig {
  const char* toml;
  const char* where;
};

// config_rejected() for every case, each a check of its own, so that one
// accepted value does not hide the next.
void expect_configs_rejected(const DaemonProcess& dir, std::initializer_list<RejectedConfig> cases);

class DaemonProcess {
 public:
  // Creates the state directory (mode 0755, so that a child running as
  // another user can reach the socket) and writes `config_toml` into it.
  explicit DaemonProcess(const std::string& config_toml);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Runs `cxlpoold --config FILE --state-dir DIR`, stderr to the log file, and
  // waits up to 5 s until the socket accepts a connection.
  testing::AssertionResult start(const DaemonStartOptions& options = {});

  // SIGTERM, then waits up to `timeout`. Returns the exit code, 128 + signal
  // when a signal ended it, or -1 when it did not exit in time (it is then
  // killed).
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(15));

  // Waits up to `timeout` for the daemon to exit on its own; same result as stop().
  int wait_exit(std::chrono::milliseconds timeout);

  void send_signal(int sig) const;
  // True while the daemon has not exited (reaps it once it has).
  bool running();

  // Replaces the config file atomically (for SIGHUP tests).
  void write_config(const std::string& toml) const;

  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  std::string socket() const { return dir_ + "/cxlpoold.sock"; }
  std::string config_path() const { return dir_ + "/cxlpoold.toml"; }
  std::string log_path() const { return dir_ + "/cxlpoold.log"; }
  std::string log() const;
  // The exit result once it has exited (see stop()); -1 before.
  int exit_result() const { return exit_result_; }

 private:
  bool reap(bool block);
  void remove_shm_endpoints() const;

  test::TempDir state_;  // removed after the destructor has printed the log
  std::string dir_;
  pid_t pid_ = -1;
  int exit_result_ = -1;
};

}  // namespace cxlpool::integration
