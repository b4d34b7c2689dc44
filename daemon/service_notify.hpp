// SPDX-License-Identifier: Apache-2.0
// systemd readiness, status and watchdog notifications (sd_notify). Without
// libsystemd, or outside systemd (no NOTIFY_SOCKET), every call does nothing.
#pragma once

#include <cstdint>
#include <string>

namespace cxlpool::daemon {

void notify_ready(const std::string& status);
void notify_status(const std::string& status);
void notify_reloading();
void notify_stopping();
void notify_watchdog();
// Watchdog period the service manager expects, 0 when it expects none.
uint64_t watchdog_usec();

}  // namespace cxlpool::daemon
