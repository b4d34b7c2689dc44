// SPDX-License-Identifier: Apache-2.0
#include "ofi_shm_sweep.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

namespace cxlpool::drivers::ofi {
namespace {

constexpr std::string_view kPrefix = "cxlpool-";

// The pid in "cxlpool-PID-...", or 0.
long endpoint_pid(std::string_view name) {
  if (!name.starts_with(kPrefix)) return 0;
  name.remove_prefix(kPrefix.size());
  long pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc{} || end == name.data() || end == name.data() + name.size() || *end != '-') return 0;
  return pid > 0 ? pid : 0;
}

bool process_gone(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace

std::string shm_endpoint_name(long pid, unsigned instance) {
  return std::string(kPrefix) + std::to_string(pid) + "-" + std::to_string(instance);
}

std::size_t remove_dead_shm_endpoints(const std::string& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const long pid = endpoint_pid(name);
    if (pid == 0 || !process_gone(pid)) continue;
    struct stat st {};
    // Not through a link, and only our own: a root daemon removes no
    // other user's file.
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace cxlpool::drivers::ofi
