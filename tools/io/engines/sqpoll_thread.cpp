// SPDX-License-Identifier: Apache-2.0
#include "sqpoll_thread.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cxlpool::io {

std::vector<pid_t> task_ids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    try {
      out.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
    } catch (...) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<pid_t> new_task(const std::vector<pid_t>& before, const std::vector<pid_t>& after) {
  std::optional<pid_t> found;
  for (pid_t t : after) {
    if (std::binary_search(before.begin(), before.end(), t)) continue;
    if (found) return std::nullopt;  // two new ones: cannot tell which is ours
    found = t;
  }
  return found;
}

std::optional<HelperCpu> task_cpu(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name may hold spaces; fields restart after its closing ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Field 3 (state) is the first after ')'; utime and stime are 14 and 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  const long hz = ::sysconf(_SC_CLK_TCK);
  const std::uint64_t ns_per_tick = hz > 0 ? 1'000'000'000ull / static_cast<std::uint64_t>(hz) : 10'000'000ull;
  return HelperCpu{utime * ns_per_tick, stime * ns_per_tick};
}

}  // namespace cxlpool::io
