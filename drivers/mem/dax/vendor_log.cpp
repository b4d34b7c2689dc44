// SPDX-License-Identifier: Apache-2.0
#include "vendor_log.hpp"

#include <cxl/libcxl.h>
#include <daxctl/libdaxctl.h>
#include <syslog.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "cxlpool/common/log.hpp"

namespace cxlpool::drivers {
namespace {

LogLevel level_of(int priority) {
  if (priority <= LOG_ERR) return LogLevel::kError;
  if (priority == LOG_WARNING) return LogLevel::kWarning;
  if (priority == LOG_NOTICE) return LogLevel::kNotice;
  if (priority == LOG_INFO) return LogLevel::kInfo;
  return LogLevel::kDebug;
}

void forward(const char* component, int priority, const char* fn, const char* format,
             va_list args) {
  const LogLevel level = level_of(priority);
  if (!log_enabled(level)) return;
  char buf[512];
  vsnprintf(buf, sizeof buf, format, args);
  std::string msg = std::string(fn ? fn : "?") + ": " + buf;
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  log(level, component, msg);
}

void cxl_log(cxl_ctx*, int priority, const char*, int, const char* fn, const char* format,
             va_list args) {
  forward("libcxl", priority, fn, format, args);
}

void daxctl_log(daxctl_ctx*, int priority, const char*, int, const char* fn, const char* format,
                va_list args) {
  forward("libdaxctl", priority, fn, format, args);
}

}  // namespace

void route_cxl_log(cxl_ctx* ctx) { cxl_set_log_fn(ctx, cxl_log); }
void route_daxctl_log(daxctl_ctx* ctx) { daxctl_set_log_fn(ctx, daxctl_log); }

}  // namespace cxlpool::drivers
