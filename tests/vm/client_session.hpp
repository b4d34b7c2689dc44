// SPDX-License-Identifier: Apache-2.0
// What the guest-side tests that talk to cxlpoold share: the text of a
// failed libcxlpool call and the connection + region they release on every
// exit path. Header-only: only the programs that link libcxlpool include it.
#pragma once

#include <cxlpool/cxlpool.h>

#include <string>

namespace cxlpool::vmtest {

// "<what>: <strerror>" and, when the library said more, " (<detail>)".
inline std::string api_error(const std::string& what, int rc) {
  std::string text = what + ": " + cxlpool_strerror(rc);
  const char* detail = cxlpool_last_error();
  if (detail != nullptr && *detail != '\0') text += std::string(" (") + detail + ")";
  return text;
}

// Owns the connection and the region so every exit path releases them.
struct Session {
  cxlpool_client* client = nullptr;
  cxlpool_region* region = nullptr;
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    cxlpool_region_free(region);
    cxlpool_disconnect(client);
  }
};

}  // namespace cxlpool::vmtest
