// SPDX-License-Identifier: Apache-2.0
// What the C ABI's translation units share: the client handle and the
// error contract (negative errno, the message kept for cxlpool_last_error(),
// nothing thrown across the boundary).
#pragma once

#include <memory>
#include <new>
#include <string>

#include "access_reporter.hpp"
#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/result.hpp"

struct cxlpool_client {
  std::shared_ptr<cxlpool::client::Connection> conn;
  std::shared_ptr<cxlpool::client::AccessReporter> reporter;
};

namespace cxlpool::client {

// The calling thread's last failure message (cxlpool_last_error()).
std::string& last_error();

inline int record(const Error& error) {
  last_error() = error.message;
  return -(error.code > 0 ? error.code : EIO);
}

inline int record(int code, const char* message) {
  last_error() = message;
  return -code;
}

// Runs an entry point's body: clears the last error, turns an escaping
// exception into a negative errno.
template <typename Fn>
int guarded(Fn&& fn) {
  try {
    last_error().clear();
    return fn();
  } catch (const std::bad_alloc&) {
    return record(ENOMEM, "out of memory");
  } catch (...) {
    return record(EIO, "internal error");
  }
}

}  // namespace cxlpool::client
