// SPDX-License-Identifier: Apache-2.0
// The daemon's logging: spdlog to stderr. Under systemd (JOURNAL_STREAM set)
// each line starts with a "<N>" priority prefix that journald understands and
// no timestamp (journald adds its own). Library log lines (cxlpool::log) are
// routed here too.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "cxlpool/common/log.hpp"

namespace cxlpool::daemon {

void init_logging(LogLevel level);
void set_log_level(LogLevel level);
// A named logger per component ("pool", "control", "config", ...).
std::shared_ptr<spdlog::logger> logger(const std::string& component);

}  // namespace cxlpool::daemon
