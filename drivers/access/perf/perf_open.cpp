// SPDX-License-Identifier: Apache-2.0
#include "perf_open.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace cxlpool::drivers {

PerfOpenSettings initial_open_settings(const PerfSamplingConfig& config, bool phys_allowed,
                                       const PerfEventSpec& event) {
  PerfOpenSettings s;
  s.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT;
  if (config.physical && phys_allowed) s.sample_type |= PERF_SAMPLE_PHYS_ADDR;
  s.precise_ip = event.precise_ip;
  return s;
}

Result<UniqueFd> open_sampling_event(const PerfEventSpec& event, const PerfOpenSettings& settings,
                                     const PerfSamplingConfig& config, int pid, int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = event.type;
  attr.config = event.config;
  attr.config1 = event.config1;
  attr.config2 = event.config2;
  attr.sample_period = event.sample_period;
  attr.sample_type = settings.sample_type;
  attr.precise_ip = settings.precise_ip;
  attr.disabled = 1;
  attr.exclude_kernel = config.exclude_kernel ? 1 : 0;
  attr.exclude_hv = 1;
  // collect() polls the ring once per epoch; no wake-ups needed.
  attr.wakeup_events = 0;
  const long fd = ::syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const std::string where = pid >= 0 ? "pid " + std::to_string(pid) : "cpu " + std::to_string(cpu);
    return fail_errno("perf_event_open(" + event.label + ", precise " + std::to_string(settings.precise_ip) +
                      ", " + where + ")");
  }
  return UniqueFd(static_cast<int>(fd));
}

Result<UniqueFd> open_sampling_event_settling(const PerfEventSpec& event, PerfOpenSettings& settings,
                                              const PerfSamplingConfig& config, int pid, int cpu) {
  auto first = open_sampling_event(event, settings, config, pid, cpu);
  if (first) return first;
  const auto retryable = [](int code) { return code == EINVAL || code == EOPNOTSUPP || code == EACCES; };
  if (!retryable(first.error().code)) return first;
  for (const bool keep_phys : {true, false}) {
    PerfOpenSettings s = settings;
    if (!keep_phys) {
      if ((s.sample_type & PERF_SAMPLE_PHYS_ADDR) == 0) break;
      s.sample_type &= ~static_cast<uint64_t>(PERF_SAMPLE_PHYS_ADDR);
    }
    for (int precise = static_cast<int>(event.precise_ip); precise >= 0; --precise) {
      s.precise_ip = static_cast<uint32_t>(precise);
      if (s.sample_type == settings.sample_type && s.precise_ip == settings.precise_ip) continue;
      auto fd = open_sampling_event(event, s, config, pid, cpu);
      if (fd) {
        settings = s;
        return fd;
      }
      if (!retryable(fd.error().code)) return fd;
    }
  }
  return first;
}

}  // namespace cxlpool::drivers
