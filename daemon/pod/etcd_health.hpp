// SPDX-License-Identifier: Apache-2.0
// What a daemon's two etcd threads (the lease session and the prefix
// follower) last saw of etcd: whether each reached it, the last error, and
// the failure each last logged, so that etcd away for minutes logs one line
// per kind of failure and one when it answers again, not a line a retry.
// Shared by pod membership and the device pool's state. Not thread-safe:
// its owner calls it under its own lock.
#pragma once

#include <string>

namespace cxlpool::daemon {

class EtcdHealth {
 public:
  // Records a failure of the session (true) or the follower (false).
  // Returns whether to log it: a message the thread has not just logged.
  bool failed(bool session, const std::string& message) {
    ok_[slot(session)] = false;
    last_error_ = message;
    std::string& logged = logged_[slot(session)];
    if (logged == message) return false;
    logged = message;
    return true;
  }
  // Records an answer. Returns whether to log that etcd is back: the
  // thread had logged a failure.
  bool answered(bool session) {
    ok_[slot(session)] = true;
    std::string& logged = logged_[slot(session)];
    if (logged.empty()) return false;
    logged.clear();
    return true;
  }
  // The session lost its lease: not connected until it registers again.
  void session_lost() { ok_[slot(true)] = false; }

  [[nodiscard]] bool connected() const { return ok_[0] && ok_[1]; }
  [[nodiscard]] const std::string& last_error() const { return last_error_; }

 private:
  static int slot(bool session) { return session ? 0 : 1; }

  bool ok_[2] = {false, false};
  std::string logged_[2];
  std::string last_error_;
};

}  // namespace cxlpool::daemon
