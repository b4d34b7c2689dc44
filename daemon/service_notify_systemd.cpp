// SPDX-License-Identifier: Apache-2.0
// sd_notify through libsystemd; the build picks this file when it has
// libsystemd, service_notify_none.cpp otherwise.
#include "service_notify.hpp"

#include <systemd/sd-daemon.h>

namespace cxlpool::daemon {
namespace {
void send(const std::string& text) { (void)sd_notify(0, text.c_str()); }
}  // namespace

void notify_ready(const std::string& status) { send("READY=1\nSTATUS=" + status); }
void notify_status(const std::string& status) { send("STATUS=" + status); }
void notify_reloading() { send("RELOADING=1"); }
void notify_stopping() { send("STOPPING=1"); }
void notify_watchdog() { send("WATCHDOG=1"); }
uint64_t watchdog_usec() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

}  // namespace cxlpool::daemon
