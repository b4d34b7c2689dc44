// SPDX-License-Identifier: Apache-2.0
// Why io_uring said ENOMEM: for a process without CAP_IPC_LOCK the kernel
// counts a ring's memory and every registered buffer against
// RLIMIT_MEMLOCK, and a daemon started with a small limit (a service
// manager's LimitMEMLOCK=) meets it long before memory runs out.
#pragma once

#include <string>

namespace cxlpool::drivers {

// " (RLIMIT_MEMLOCK is 8.0 MiB and the process lacks CAP_IPC_LOCK: ...)"
// when the limit applies to this process; "" when it does not (the ENOMEM
// had another cause).
std::string uring_memlock_hint();

}  // namespace cxlpool::drivers
