// SPDX-License-Identifier: Apache-2.0
#include "logging.hpp"

#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace cxlpool::daemon {
namespace {

// spdlog level → syslog priority, for journald's "<N>" line prefix.
class PriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    int prio = 6;
    switch (msg.level) {
      case spdlog::level::critical: prio = 2; break;
      case spdlog::level::err: prio = 3; break;
      case spdlog::level::warn: prio = 4; break;
      case spdlog::level::info: prio = 6; break;
      default: prio = 7; break;
    }
    const char text[4] = {'<', static_cast<char>('0' + prio), '>', '\0'};
    dest.append(text, text + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PriorityFlag>();
  }
};

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kWarning: return spdlog::level::warn;
    case LogLevel::kNotice:
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kDebug: return spdlog::level::debug;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::sinks::stderr_sink_mt>& shared_sink() {
  static auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  return sink;
}

std::unique_ptr<spdlog::formatter> make_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  const bool journald = std::getenv("JOURNAL_STREAM") != nullptr;
  formatter->add_flag<PriorityFlag>('*').set_pattern(journald ? "%*%n: %v"
                                                              : "%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %n: %v");
  return formatter;
}

void forward_library_log(LogLevel level, std::string_view component, std::string_view message, void*) {
  logger(std::string(component))->log(to_spdlog(level), "{}", message);
}

LogLevel g_level = LogLevel::kInfo;

}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get(component)) return existing;
  auto created = std::make_shared<spdlog::logger>(component, shared_sink());
  created->set_formatter(make_formatter());
  created->set_level(to_spdlog(g_level));
  spdlog::register_logger(created);
  return created;
}

void init_logging(LogLevel level) {
  g_level = level;
  set_log_level(level);
  set_log_sink(forward_library_log, nullptr, level);
}

void set_log_level(LogLevel level) {
  g_level = level;
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(to_spdlog(level)); });
  set_log_sink(forward_library_log, nullptr, level);
}

}  // namespace cxlpool::daemon
