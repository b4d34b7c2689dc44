// SPDX-License-Identifier: Apache-2.0
// AccessSource "perf": hardware memory-access sampling through
// perf_event_open. Intel PEBS samples loads (cpu/mem-loads/, with a load
// latency threshold) and optionally stores (cpu/mem-stores/); AMD IBS samples
// micro-ops (ibs_op). Each sample carries the data address that was accessed.
//
// Units: PageAccess::count is a number of samples that hit the page this
// epoch; one sample stands for about `sample_period` events of its kind
// (loads above the latency threshold, retired stores, or micro-ops).
// Locations are physical (kPhysical) when the kernel gives the sample's
// physical address, otherwise (kProcess, pid, virtual page).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"

namespace cxlpool::drivers {

enum class PerfPmuPreference : uint8_t { kAuto, kPebs, kIbs };

struct PerfSamplingConfig {
  std::string sysfs_root = "/sys";    // PMU descriptions, online CPUs
  std::string procfs_root = "/proc";  // perf_event_paranoid, capabilities, threads
  PerfPmuPreference pmu = PerfPmuPreference::kAuto;  // auto: PEBS, then IBS
  // Empty: one event per online CPU (system-wide). Otherwise one event per
  // thread of each pid, as the threads exist when the source is made.
  std::vector<int> pids;
  uint64_t sample_period = 10'007;  // events per sample (IBS: rounded to 16)
  uint32_t load_latency = 30;       // PEBS ldlat: only loads slower than this, cycles
  bool stores = false;              // PEBS: also sample stores
  bool physical = true;             // ask for PERF_SAMPLE_PHYS_ADDR (falls back without)
  uint32_t ring_pages = 64;         // data pages per ring buffer, a power of two
  bool exclude_kernel = true;
};

// Opens and enables the sampling events. Errors:
//   ENODEV  no memory-sampling PMU (no cpu/events/mem-loads, no ibs_op):
//           the message lists what the host has
//   EACCES  perf_event_paranoid too high without CAP_PERFMON/CAP_SYS_ADMIN
//   EINVAL  bad configuration, or a malformed PMU description in sysfs
//   ESRCH   a configured pid does not exist
//   the errno of perf_event_open or mmap otherwise, with the event named.
Result<std::unique_ptr<hal::AccessSource>> make_perf_sampling_source(const PerfSamplingConfig& config);

}  // namespace cxlpool::drivers
