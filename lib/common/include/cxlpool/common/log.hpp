// SPDX-License-Identifier: Apache-2.0
// A process-wide log sink. Libraries never print: they call log() and the
// host (the daemon, a tool, or an application through the C ABI) decides where
// the line goes. With no sink installed, lines are dropped.
#pragma once

#include <string_view>

namespace cxlpool {

// Same numbering as syslog/journald priorities, so the daemon can prefix "<N>".
enum class LogLevel : int { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6, kDebug = 7 };

using LogSink = void (*)(LogLevel level, std::string_view component, std::string_view message,
                         void* user);

void set_log_sink(LogSink sink, void* user, LogLevel max_level);
bool log_enabled(LogLevel level);
void log(LogLevel level, std::string_view component, std::string_view message);

}  // namespace cxlpool
