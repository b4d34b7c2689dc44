// SPDX-License-Identifier: Apache-2.0
// The daemon's logging: one named spdlog logger per component, all writing
// through one sink that picks the output once, at init_logging():
//   - the systemd journal (sd_journal_send) when JOURNAL_STREAM names the
//     stream stderr is (the service runs under systemd with its stderr
//     connected to journald) and the build has libsystemd: each line with
//     PRIORITY and the structured fields CXLPOOL_COMPONENT, CXLPOOL_CLIENT,
//     CXLPOOL_REGION and ERRNO;
//   - "<N>component: message" lines on stderr under journald without
//     libsystemd (journald reads the priority prefix);
//   - plain text otherwise: "time level component: message".
// Library log lines (cxlpool::log) are routed here too, NOTICE included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "cxlpool/common/log.hpp"

namespace cxlpool::daemon {

void init_logging(LogLevel level);
void set_log_level(LogLevel level);
// A named logger per component ("pool", "control", "config", ...). Its
// messages should not start with the component's name again: the sink drops
// such a repeat so that each line names its component once.
std::shared_ptr<spdlog::logger> logger(const std::string& component);

// Structured fields for the journal, attached to every line this thread logs
// while a ScopedLogFields lives (0: the field is left out). Plain text
// output does not show them: the messages already say what matters.
struct LogFields {
  uint64_t client = 0;  // control session id
  uint64_t region = 0;  // pool region id
  int error = 0;        // errno of the failure the line reports
};

class ScopedLogFields {
 public:
  // Fields set here replace those of an enclosing scope; 0 keeps them.
  explicit ScopedLogFields(const LogFields& fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  LogFields saved_;
};

// spdlog has no NOTICE level: notice() logs at spdlog's warn level with the
// priority marked 5 for the sink (which filters it against the configured
// level itself). For normal but significant events: start, ready, stop, reload.
void mark_notice(bool on);
template <typename... Args>
void notice(spdlog::logger& log, spdlog::format_string_t<Args...> format, Args&&... args) {
  mark_notice(true);
  log.warn(format, std::forward<Args>(args)...);
  mark_notice(false);
}

enum class LogOutput { kText, kPrefixedStream, kJournal };
// `journal_stream`: $JOURNAL_STREAM ("DEVICE:INODE" of the stream journald
// gave the service, or null); `fd`: the descriptor logs go to.
LogOutput choose_log_output(const char* journal_stream, int fd, bool have_journal);

// Where journal entries go ("FIELD=value" strings); sd_journal_sendv by
// default. Returns 0 or a negative errno; on failure the line goes to stderr.
using JournalSend = int (*)(const std::vector<std::string>& fields);
// For tests: logs go to `send` (journal) or stay text, at `level`.
void init_logging_for_test(LogLevel level, LogOutput output, JournalSend send, int text_fd);

}  // namespace cxlpool::daemon
