// SPDX-License-Identifier: Apache-2.0
// One error type for all internal code: an errno value plus a human message
// that names what failed. The C ABI turns it into a negative errno.
#pragma once

#include <cerrno>
#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace cxlpool {

struct Error {
  int code = EINVAL;    // positive errno value
  std::string message;  // what failed, with context; no trailing newline
};

template <typename T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(int code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

// Builds an error from the current errno, prefixing `what` ("mbind node 1").
tl::unexpected<Error> fail_errno(std::string what);

// "what: strerror(code)".
std::string errno_message(const std::string& what, int code);

}  // namespace cxlpool
