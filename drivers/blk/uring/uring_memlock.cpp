// SPDX-License-Identifier: Apache-2.0
#include "uring_memlock.hpp"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cxlpool/common/units.hpp"

namespace cxlpool::drivers {
namespace {

bool holds_ipc_lock() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK)) != 0;
}

}  // namespace

std::string uring_memlock_hint() {
  if (holds_ipc_lock()) return "";
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return " (RLIMIT_MEMLOCK is " + format_size(limit.rlim_cur) +
         " and the process lacks CAP_IPC_LOCK: io_uring counts its rings and registered buffers against it;"
         " raise the limit, e.g. LimitMEMLOCK= in the service, or grant CAP_IPC_LOCK)";
}

}  // namespace cxlpool::drivers
