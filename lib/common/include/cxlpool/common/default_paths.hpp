// SPDX-License-Identifier: Apache-2.0
// Where the daemon puts its state and control socket when not told otherwise.
// The daemon, the library and cxlpoolctl must agree, so the rule lives here.
#pragma once

#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool {

inline constexpr const char* kSocketName = "cxlpoold.sock";
inline constexpr const char* kRootStateDir = "/run/cxlpool";

// /run/cxlpool for root; $XDG_RUNTIME_DIR/cxlpool otherwise; ENOENT with an
// explanation when a non-root user has no XDG_RUNTIME_DIR.
Result<std::string> default_state_dir();

// $CXLPOOL_SOCKET when set, else <default_state_dir()>/cxlpoold.sock.
Result<std::string> default_socket_path();

}  // namespace cxlpool
