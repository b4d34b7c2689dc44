// SPDX-License-Identifier: Apache-2.0
#include "dpdk_eal.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "dpdk_module_loader.hpp"

namespace cxlpool::drivers {
namespace {

enum class EalState { kNotStarted, kRunning, kFailed, kCleanedUp };

struct Eal {
  std::mutex mutex;
  EalState state = EalState::kNotStarted;
  int users = 0;
  Error failure{0, ""};
  const CxlpoolDpdkModule* module = nullptr;
};

Eal& eal() {
  static Eal instance;
  return instance;
}

// DPDK's log, kept in memory: its tail goes into error messages. DPDK
// threads log too, hence the lock.
struct LogTail {
  std::mutex mutex;
  std::string text;       // the last kKeep bytes
  std::size_t total = 0;  // bytes ever logged
  static constexpr std::size_t kKeep = 8192;
};

LogTail& log_tail() {
  static LogTail instance;
  return instance;
}

ssize_t log_write(void*, const char* data, size_t size) {
  LogTail& log = log_tail();
  std::lock_guard lock(log.mutex);
  log.text.append(data, size);
  if (log.text.size() > LogTail::kKeep) log.text.erase(0, log.text.size() - LogTail::kKeep);
  log.total += size;
  return static_cast<ssize_t>(size);
}

FILE* log_stream() {
  static FILE* stream = [] {
    cookie_io_functions_t io{};
    io.write = &log_write;
    FILE* f = fopencookie(nullptr, "w", io);
    if (f != nullptr) std::setvbuf(f, nullptr, _IOLBF, 0);
    return f;
  }();
  return stream;
}

std::string file_prefix() { return "cxlpool-" + std::to_string(::getpid()); }

// Where EAL puts its runtime files (eal_create_runtime_dir's rule).
std::filesystem::path runtime_dir() {
  std::string base = "/var/run";
  if (::getuid() != 0) {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    base = xdg != nullptr ? xdg : "/tmp";
  }
  return std::filesystem::path(base) / "dpdk" / file_prefix();
}

// EAL leaves its (empty, with --no-shconf) runtime directory behind.
void remove_runtime_dir() {
  std::error_code ec;
  const auto dir = runtime_dir();
  std::filesystem::remove_all(dir, ec);
  std::filesystem::remove(dir.parent_path(), ec);  // only when no other process uses it
}

std::string cpu_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string list;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return "0";
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) list += (list.empty() ? "" : ",") + std::to_string(cpu);
  }
  return list.empty() ? "0" : list;
}

Result<void> start(Eal& e) {
  auto module = load_dpdk_module();
  if (!module) return tl::unexpected(module.error());
  e.module = *module;
  if (FILE* stream = log_stream()) e.module->set_log_stream(stream);
  std::vector<std::string> args = dpdk_eal_arguments();
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::size_t mark = dpdk_log_mark();
  const int r = e.module->eal_init(static_cast<int>(args.size()), argv.data());
  if (r == 0) return {};
  remove_runtime_dir();
  std::string text = "cannot initialise DPDK's EAL: " + std::string(std::strerror(-r));
  if (r == -EALREADY) text += " (something else in this process initialised EAL)";
  if (std::string said = dpdk_log_since(mark); !said.empty()) text += " (DPDK: " + said + ")";
  return fail(-r, text);
}

}  // namespace

std::vector<std::string> dpdk_eal_arguments() {
  return {"cxlpool",           "--no-huge",     "--no-pci", "--no-shconf",  "--no-telemetry",
          "--file-prefix",     file_prefix(),   "--lcores", "0@(" + cpu_list() + ")",
          "--log-level",       "notice", "-m", "256"};
}

Result<const CxlpoolDpdkModule*> acquire_dpdk_eal() {
  Eal& e = eal();
  std::lock_guard lock(e.mutex);
  switch (e.state) {
    case EalState::kRunning:
      ++e.users;
      return e.module;
    case EalState::kFailed:
      return tl::unexpected(e.failure);
    case EalState::kCleanedUp:
      return fail(EALREADY,
                  "DPDK's EAL ran in this process and was cleaned up when its last dpdk port closed; EAL "
                  "initialises once per process (open the next port before closing the last, or use a new "
                  "process)");
    case EalState::kNotStarted:
      break;
  }
  if (auto ok = start(e); !ok) {
    // A module that is not there may be there for a later call in a test;
    // an EAL that failed to start cannot start again.
    if (ok.error().code != ENOTSUP) {
      e.state = EalState::kFailed;
      e.failure = ok.error();
    }
    return tl::unexpected(ok.error());
  }
  e.state = EalState::kRunning;
  e.users = 1;
  return e.module;
}

void release_dpdk_eal() {
  Eal& e = eal();
  std::lock_guard lock(e.mutex);
  if (e.state != EalState::kRunning || --e.users > 0) return;
  e.module->eal_cleanup();
  remove_runtime_dir();
  e.state = EalState::kCleanedUp;
}

std::size_t dpdk_log_mark() {
  if (FILE* stream = log_stream()) std::fflush(stream);
  LogTail& log = log_tail();
  std::lock_guard lock(log.mutex);
  return log.total;
}

std::string dpdk_log_since(std::size_t mark) {
  if (FILE* stream = log_stream()) std::fflush(stream);
  LogTail& log = log_tail();
  std::lock_guard lock(log.mutex);
  const std::size_t fresh = std::min(log.total - mark, log.text.size());
  std::string text = log.text.substr(log.text.size() - fresh);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const std::size_t line = text.rfind('\n');
  return line == std::string::npos ? text : text.substr(line + 1);
}

}  // namespace cxlpool::drivers
