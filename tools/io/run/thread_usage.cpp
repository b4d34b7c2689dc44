// SPDX-License-Identifier: Apache-2.0
#include "thread_usage.hpp"

#include <sys/resource.h>

namespace cxlpool::io {
namespace {

std::uint64_t to_ns(const timeval& tv) {
  return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(tv.tv_usec) * 1000ull;
}

std::uint64_t sub(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

ThreadUsage thread_usage() {
  rusage ru{};
  ThreadUsage u;
  if (::getrusage(RUSAGE_THREAD, &ru) != 0) return u;
  u.user_ns = to_ns(ru.ru_utime);
  u.system_ns = to_ns(ru.ru_stime);
  u.context_switches = static_cast<std::uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw);
  u.major_faults = static_cast<std::uint64_t>(ru.ru_majflt);
  u.minor_faults = static_cast<std::uint64_t>(ru.ru_minflt);
  return u;
}

ThreadUsage operator-(const ThreadUsage& a, const ThreadUsage& b) {
  return {sub(a.user_ns, b.user_ns), sub(a.system_ns, b.system_ns),
          sub(a.context_switches, b.context_switches), sub(a.major_faults, b.major_faults),
          sub(a.minor_faults, b.minor_faults)};
}

}  // namespace cxlpool::io
