// SPDX-License-Identifier: Apache-2.0
// Doing a step of the restore as the checkpointed process would: a root
// restorer (the daemon's, restoring for a client) must not connect, unlink
// or bind with root's rights on the process's behalf.
#pragma once

#include <grp.h>
#include <unistd.h>

#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

// Runs `step` (returning a Result) under the process's effective uid, gid
// and groups: filesystem access, socket file ownership and SO_PEERCRED
// follow them. Then root's effective ids come back (the groups are left:
// the final stage sets every credential itself). A restorer that is not
// root already runs with no more than the process's rights: `step` runs
// as it is.
template <typename Step>
auto as_process(const Credentials& creds, Step&& step) -> decltype(step()) {
  if (::geteuid() != 0) return step();
  const uid_t euid = ::geteuid();
  const gid_t egid = ::getegid();
  const std::vector<gid_t> groups(creds.groups.begin(), creds.groups.end());
  if (::setgroups(groups.size(), groups.data()) != 0) return fail_errno("setgroups for the process's step");
  if (::setresgid(-1, creds.gid[1], -1) != 0) return fail_errno("setresgid for the process's step");
  if (::setresuid(-1, creds.uid[1], -1) != 0) {
    const auto failed = fail_errno("setresuid for the process's step");
    (void)::setresgid(-1, egid, -1);
    return failed;
  }
  auto result = step();
  if (::setresuid(-1, euid, -1) != 0 || ::setresgid(-1, egid, -1) != 0) {
    return fail_errno("taking back the restorer's credentials");
  }
  return result;
}

}  // namespace cxlpool::ckpt
