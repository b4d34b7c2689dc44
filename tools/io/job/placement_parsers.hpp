// SPDX-License-Identifier: Apache-2.0
// Parsers for where a job runs and where its buffers live: fio's CPU and
// node lists ("0-3,6", cpus_allowed / numa_cpu_nodes) and numa_mem_policy
// ("bind:0-1", "prefer:1", "interleave:0,2", "local", "default"). Errors
// carry only the reason, as value_parsers.hpp's do.
#pragma once

#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "job_spec.hpp"

namespace cxlpool::io {

// Largest CPU or node number accepted (the kernel's CONFIG_NR_CPUS ceiling).
inline constexpr int kMaxCpuIndex = 8191;

// "0-3,6": sorted, without repeats; ranges are inclusive.
Result<std::vector<int>> parse_index_list(std::string_view text, int max_index);

Result<NumaMemPolicy> parse_mem_policy(std::string_view text);

}  // namespace cxlpool::io
