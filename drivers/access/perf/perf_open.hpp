// SPDX-License-Identifier: Apache-2.0
// perf_event_open for one memory-sampling event. Precise levels and the
// physical-address sample field differ between CPUs and kernels, so the
// first open of an event walks down from the most it could ask for.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/access_source.hpp"
#include "perf_pmu.hpp"
#include "perf_source.hpp"

namespace cxlpool::drivers {

struct PerfOpenSettings {
  uint64_t sample_type = 0;
  uint32_t precise_ip = 0;
};

// IP|TID|ADDR|WEIGHT, plus PHYS_ADDR when asked for and allowed.
PerfOpenSettings initial_open_settings(const PerfSamplingConfig& config, bool phys_allowed,
                                       const PerfEventSpec& event);

// Opens `event` disabled with exactly `settings`. Errors: the errno of
// perf_event_open, with the event, pid and cpu named.
Result<UniqueFd> open_sampling_event(const PerfEventSpec& event, const PerfOpenSettings& settings,
                                     const PerfSamplingConfig& config, int pid, int cpu);

// Like open_sampling_event, but on EINVAL/EOPNOTSUPP/EACCES retries with a
// lower precise_ip and then without PHYS_ADDR; `settings` ends as what
// worked. The error is the first attempt's.
Result<UniqueFd> open_sampling_event_settling(const PerfEventSpec& event, PerfOpenSettings& settings,
                                              const PerfSamplingConfig& config, int pid, int cpu);

// The source behind make_perf_sampling_source, for events already chosen:
// checks permission, opens every event on every target (CPUs, or the
// threads of config.pids), maps a ring for each and enables them. Any
// perf event whose samples carry a data address works, which lets tests
// drive the whole path with a software page-fault event on hosts without a
// memory PMU. Errors as make_perf_sampling_source, less ENODEV.
Result<std::unique_ptr<hal::AccessSource>> open_perf_sampling_source(const std::vector<PerfEventSpec>& events,
                                                                     const PerfSamplingConfig& config);

}  // namespace cxlpool::drivers
