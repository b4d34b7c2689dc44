// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/log.hpp"

#include <atomic>
#include <mutex>

namespace cxlpool {
namespace {

struct SinkState {
  std::mutex mutex;
  LogSink sink = nullptr;
  void* user = nullptr;
};

SinkState& state() {
  static SinkState s;
  return s;
}

std::atomic<int> g_max_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_have_sink{false};

}  // namespace

void set_log_sink(LogSink sink, void* user, LogLevel max_level) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.sink = sink;
  s.user = user;
  g_max_level.store(static_cast<int>(max_level));
  g_have_sink.store(sink != nullptr);
}

bool log_enabled(LogLevel level) {
  return g_have_sink.load(std::memory_order_relaxed) &&
         static_cast<int>(level) <= g_max_level.load(std::memory_order_relaxed);
}

void log(LogLevel level, std::string_view component, std::string_view message) {
  if (!log_enabled(level)) return;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.sink != nullptr) s.sink(level, component, message, s.user);
}

}  // namespace cxlpool
