// SPDX-License-Identifier: Apache-2.0
// A build without libsystemd: nothing to tell a service manager.
#include "service_notify.hpp"

namespace cxlpool::daemon {

void notify_ready(const std::string&) {}
void notify_status(const std::string&) {}
void notify_reloading() {}
void notify_stopping() {}
void notify_watchdog() {}
uint64_t watchdog_usec() { return 0; }

}  // namespace cxlpool::daemon
