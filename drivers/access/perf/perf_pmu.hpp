// SPDX-License-Identifier: Apache-2.0
// Finds a PMU that samples memory accesses and turns its sysfs event
// descriptions ("event=0xcd,umask=0x1,ldlat=3" with "config:0-7" formats)
// into perf_event_attr settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"
#include "perf_source.hpp"

namespace cxlpool::drivers {

// One sampling event, ready for perf_event_attr.
struct PerfEventSpec {
  std::string label;  // "cpu/mem-loads/", "ibs_op//"
  uint32_t type = 0;
  uint64_t config = 0;
  uint64_t config1 = 0;
  uint64_t config2 = 0;
  uint32_t precise_ip = 0;  // the highest to try; lower ones are tried after
  uint64_t sample_period = 0;
};

struct PerfMemoryPmu {
  std::string kind;  // "Intel PEBS" or "AMD IBS"
  std::vector<PerfEventSpec> events;
};

// ENODEV when no suitable PMU exists; the message says what was looked for
// and which PMUs the host has. EINVAL for malformed descriptions.
Result<PerfMemoryPmu> find_memory_pmu(const PerfSamplingConfig& config);

// Encodes "term=value,term,..." using the PMU's format/ directory below
// <sysfs>/bus/event_source/devices/<pmu>. `overrides` replace terms of the
// same name (or add them).
Result<PerfEventSpec> encode_pmu_event(const SysfsRoot& sys, const std::string& pmu,
                                       const std::string& terms,
                                       const std::vector<std::pair<std::string, uint64_t>>& overrides);

// Whether this process may open the events the config asks for, judging by
// perf_event_paranoid and its effective capabilities. EACCES with the reason.
// The value says whether physical sample addresses are allowed too.
Result<bool> check_perf_permission(const PerfSamplingConfig& config);

// The online CPUs (<sysfs>/devices/system/cpu/online).
Result<std::vector<int>> online_cpus(const std::string& sysfs_root);

// "perf_event_open(cycles): <strerror>" or "a cycles counter opens": tells a
// host without any hardware PMU apart from one lacking memory sampling.
std::string hardware_counter_note();

}  // namespace cxlpool::drivers
