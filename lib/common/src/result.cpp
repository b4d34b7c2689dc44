// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/result.hpp"

#include <cstring>

namespace cxlpool {

std::string errno_message(const std::string& what, int code) {
  return what + ": " + std::strerror(code);
}

tl::unexpected<Error> fail_errno(std::string what) {
  const int code = errno;
  return fail(code, errno_message(what, code));
}

}  // namespace cxlpool
