// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/default_paths.hpp"

#include <unistd.h>

#include <cstdlib>

namespace cxlpool {

Result<std::string> default_state_dir() {
  if (::geteuid() == 0) return std::string(kRootStateDir);
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime == nullptr || runtime[0] != '/') {
    return fail(ENOENT,
                "XDG_RUNTIME_DIR is not set (or not absolute) and the caller is not root: "
                "pass --state-dir/--socket or set CXLPOOL_SOCKET");
  }
  return std::string(runtime) + "/cxlpool";
}

Result<std::string> default_socket_path() {
  const char* env = std::getenv("CXLPOOL_SOCKET");
  if (env != nullptr && env[0] != '\0') return std::string(env);
  auto dir = default_state_dir();
  if (!dir) return tl::unexpected(dir.error());
  return *dir + "/" + kSocketName;
}

}  // namespace cxlpool
