// SPDX-License-Identifier: Apache-2.0
#include "perf_probe.hpp"

#include <linux/perf_event.h>

#include <cerrno>
#include <string>

#include "perf_open.hpp"
#include "perf_pmu.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_perf_sampling() { return probe_perf_sampling_with(PerfSamplingConfig{}); }

hal::BackendReport probe_perf_sampling_with(const PerfSamplingConfig& config) {
  hal::BackendReport report{"AccessSource", "perf", hal::BackendState::kNotPresent, ""};
  auto pmu = find_memory_pmu(config);
  if (!pmu) {
    report.detail = pmu.error().message;
    if (pmu.error().code == ENODEV) report.detail += "; " + hardware_counter_note();
    return report;
  }
  auto phys = check_perf_permission(config);
  if (!phys) {
    report.detail = pmu->kind + " present, but " + phys.error().message;
    return report;
  }
  int pid = -1;
  int cpu = -1;
  if (config.pids.empty()) {
    auto cpus = online_cpus(config.sysfs_root);
    if (!cpus) {
      report.detail = "online CPUs: " + cpus.error().message;
      return report;
    }
    cpu = cpus->front();
  } else {
    pid = config.pids.front();
  }
  const PerfEventSpec& event = pmu->events.front();
  PerfOpenSettings settings = initial_open_settings(config, *phys, event);
  auto fd = open_sampling_event_settling(event, settings, config, pid, cpu);
  if (!fd) {
    report.detail = pmu->kind + " present, but " + fd.error().message;
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = pmu->kind + " via " + event.label + ", precise " + std::to_string(settings.precise_ip) +
                  ((settings.sample_type & PERF_SAMPLE_PHYS_ADDR) != 0 ? ", physical addresses"
                                                                        : ", virtual addresses");
  return report;
}

}  // namespace cxlpool::drivers
