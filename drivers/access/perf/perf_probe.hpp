// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"
#include "perf_source.hpp"

namespace cxlpool::drivers {

// AccessSource/perf. Available when a memory-sampling PMU exists (Intel
// cpu/events/mem-loads or AMD ibs_op), perf_event_paranoid or our
// capabilities allow system-wide sampling, and one sampling event opens on
// the first online CPU (it is closed again at once). Not present otherwise,
// with the reason: which PMU is missing (and whether any hardware counter
// opens), the paranoid level, or the errno of perf_event_open.
hal::BackendReport probe_perf_sampling();
// The same for a given configuration (sysfs/procfs roots, PMU choice, pids).
hal::BackendReport probe_perf_sampling_with(const PerfSamplingConfig& config);

}  // namespace cxlpool::drivers
