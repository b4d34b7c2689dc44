// SPDX-License-Identifier: Apache-2.0
#include "logging.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include <spdlog/sinks/base_sink.h>

#include "log_journal.hpp"

namespace cxlpool::daemon {
namespace {

thread_local LogFields t_fields;
thread_local bool t_notice = false;

// The configured level as a syslog priority: lines above it are dropped.
std::atomic<int> g_max_priority{static_cast<int>(LogLevel::kInfo)};

int priority_of(const spdlog::details::log_msg& msg) {
  switch (msg.level) {
    case spdlog::level::critical: return 2;
    case spdlog::level::err: return 3;
    case spdlog::level::warn: return t_notice ? 5 : 4;
    case spdlog::level::info: return 6;
    default: return 7;
  }
}

std::string_view level_name(int priority) {
  switch (priority) {
    case 2: return "critical";
    case 3: return "error";
    case 4: return "warning";
    case 5: return "notice";
    case 6: return "info ";
    default: return "debug";
  }
}

// The message without a repeat of its component ("kvstore: started" logged
// by the kvstore logger), which errors passed up from lower layers carry.
std::string_view without_component(std::string_view message, std::string_view component) {
  while (message.size() > component.size() + 1 && message.starts_with(component) &&
         message.substr(component.size(), 2) == ": ") {
    message.remove_prefix(component.size() + 2);
  }
  return message;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

class DaemonSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void configure(LogOutput output, JournalSend send, int fd) {
    std::lock_guard lock(mutex_);
    output_ = output;
    send_ = send;
    fd_ = fd;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const int priority = priority_of(msg);
    if (priority > g_max_priority.load(std::memory_order_relaxed)) return;
    const std::string_view component(msg.logger_name.data(), msg.logger_name.size());
    const std::string_view message = without_component({msg.payload.data(), msg.payload.size()}, component);
    if (output_ == LogOutput::kJournal && send_journal(priority, component, message) == 0) return;
    std::string line;
    if (output_ == LogOutput::kText) {
      line = timestamp(msg.time) + " " + std::string(level_name(priority)) + " ";
    } else {
      line = "<" + std::to_string(priority) + ">";
    }
    line.append(component).append(": ").append(message).push_back('\n');
    write_all(fd_, line);
  }
  void flush_() override {}

 private:
  int send_journal(int priority, std::string_view component, std::string_view message) {
    std::vector<std::string> fields;
    fields.push_back("MESSAGE=" + std::string(component) + ": " + std::string(message));
    fields.push_back("PRIORITY=" + std::to_string(priority));
    fields.push_back("SYSLOG_IDENTIFIER=cxlpoold");
    fields.push_back("CXLPOOL_COMPONENT=" + std::string(component));
    if (t_fields.client != 0) fields.push_back("CXLPOOL_CLIENT=" + std::to_string(t_fields.client));
    if (t_fields.region != 0) fields.push_back("CXLPOOL_REGION=" + std::to_string(t_fields.region));
    if (t_fields.error != 0) fields.push_back("ERRNO=" + std::to_string(t_fields.error));
    return send_(fields);
  }

  static std::string timestamp(spdlog::log_clock::time_point when) {
    const auto since_epoch = when.time_since_epoch();
    const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char text[40];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    std::snprintf(text + n, sizeof text - n, ".%03d", static_cast<int>(millis));
    return text;
  }

  LogOutput output_ = LogOutput::kText;
  JournalSend send_ = journal_send;
  int fd_ = STDERR_FILENO;
};

std::shared_ptr<DaemonSink>& shared_sink() {
  static auto sink = std::make_shared<DaemonSink>();
  return sink;
}

// The spdlog level that lets every line of `level` through: NOTICE lines
// travel at spdlog's warn level, the sink filters the rest.
spdlog::level::level_enum threshold(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kWarning:
    case LogLevel::kNotice: return spdlog::level::warn;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kDebug: return spdlog::level::debug;
  }
  return spdlog::level::info;
}

void forward_library_log(LogLevel level, std::string_view component, std::string_view message, void*) {
  auto log = logger(std::string(component));
  switch (level) {
    case LogLevel::kError: log->error("{}", message); break;
    case LogLevel::kWarning: log->warn("{}", message); break;
    case LogLevel::kNotice: notice(*log, "{}", message); break;
    case LogLevel::kInfo: log->info("{}", message); break;
    case LogLevel::kDebug: log->debug("{}", message); break;
  }
}

LogLevel g_level = LogLevel::kInfo;

}  // namespace

ScopedLogFields::ScopedLogFields(const LogFields& fields) : saved_(t_fields) {
  if (fields.client != 0) t_fields.client = fields.client;
  if (fields.region != 0) t_fields.region = fields.region;
  if (fields.error != 0) t_fields.error = fields.error;
}

ScopedLogFields::~ScopedLogFields() { t_fields = saved_; }

void mark_notice(bool on) { t_notice = on; }

LogOutput choose_log_output(const char* journal_stream, int fd, bool have_journal) {
  if (journal_stream == nullptr) return LogOutput::kText;
  // JOURNAL_STREAM is inherited by children whose stderr may go elsewhere
  // (a file, a terminal): only the very stream journald handed out counts.
  unsigned long long device = 0;
  unsigned long long inode = 0;
  if (std::sscanf(journal_stream, "%llu:%llu", &device, &inode) != 2) return LogOutput::kText;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_dev != device || st.st_ino != inode) return LogOutput::kText;
  return have_journal ? LogOutput::kJournal : LogOutput::kPrefixedStream;
}

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get(component)) return existing;
  auto created = std::make_shared<spdlog::logger>(component, shared_sink());
  created->set_level(threshold(g_level));
  spdlog::register_logger(created);
  return created;
}

void init_logging(LogLevel level) {
  const LogOutput output = choose_log_output(std::getenv("JOURNAL_STREAM"), STDERR_FILENO, have_journal());
  shared_sink()->configure(output, journal_send, STDERR_FILENO);
  set_log_level(level);
}

void init_logging_for_test(LogLevel level, LogOutput output, JournalSend send, int text_fd) {
  shared_sink()->configure(output, send, text_fd);
  set_log_level(level);
}

void set_log_level(LogLevel level) {
  g_level = level;
  g_max_priority.store(static_cast<int>(level));
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(threshold(level)); });
  set_log_sink(forward_library_log, nullptr, level);
}

}  // namespace cxlpool::daemon
