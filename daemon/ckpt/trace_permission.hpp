// SPDX-License-Identifier: Apache-2.0
// Whether a client may have the daemon checkpoint a process: the daemon
// traces with its own privileges, so it grants only what the client could
// do itself with ptrace (PTRACE_MODE_ATTACH under the kernel's
// credential rule, without Yama or other LSMs): the target's real,
// effective and saved uid and gid are all the client's, the target is
// dumpable, and it holds no permitted capability the client lacks in its
// effective set. Admins may checkpoint any process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool::daemon {

struct ProcessCreds {
  uid_t uid[3] = {0, 0, 0};  // real, effective, saved
  gid_t gid[3] = {0, 0, 0};
  uint64_t cap_permitted = 0;
  uint64_t cap_effective = 0;
};

// Parses the Uid:, Gid:, CapPrm: and CapEff: lines of /proc/PID/status.
// EPROTO when one is missing or malformed.
Result<ProcessCreds> parse_process_creds(std::string_view status_text);
// /proc/PID/status of a live process (ESRCH when it is gone).
Result<ProcessCreds> read_process_creds(pid_t pid);

// The owner of /proc/PID is the process's effective uid only while it is
// dumpable (the kernel shows a non-dumpable process as root's).
Result<bool> process_dumpable(pid_t pid, uid_t euid);

// Why `client` (its uid and gid from the socket, its capabilities) may not
// trace `target`, or an empty string when it may.
std::string trace_refusal(uid_t client_uid, gid_t client_gid, uint64_t client_cap_effective,
                          const ProcessCreds& target, bool target_dumpable);

// The pid a pidfd refers to, from /proc/self/fdinfo: ESRCH when the process
// has exited, EXDEV when it lives in a pid namespace the daemon cannot see,
// EBADF when the descriptor is not a pidfd.
Result<pid_t> pidfd_pid(int pidfd);

}  // namespace cxlpool::daemon
