// SPDX-License-Identifier: Apache-2.0
#include "uring_memlock.hpp"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cxlpool/common/units.hpp"

namespace cxlpool::drivers {
namespace {

// The kernel exempts a process from the limit only for CAP_IPC_LOCK in the
// initial user namespace: one held inside a container's namespace (any
// uid_map but the identity) does not count.
bool exempt_from_memlock() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  if ((data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK)) == 0) return false;
  std::ifstream uid_map("/proc/self/uid_map");
  unsigned long long inside = 1, outside = 1, count = 0;
  if (!(uid_map >> inside >> outside >> count)) return true;  // no user namespaces in this kernel
  std::string more;
  return inside == 0 && outside == 0 && count == 4294967295ull && !(uid_map >> more);
}

}  // namespace

std::string uring_memlock_hint() {
  if (exempt_from_memlock()) return "";
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return " (RLIMIT_MEMLOCK is " + format_size(limit.rlim_cur) +
         " and the process lacks CAP_IPC_LOCK (of the initial user namespace): io_uring counts its rings and"
         " registered buffers against it; raise the limit, e.g. LimitMEMLOCK= in the service, or grant CAP_IPC_LOCK)";
}

}  // namespace cxlpool::drivers
