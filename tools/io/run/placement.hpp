// SPDX-License-Identifier: Apache-2.0
// Where a job runs and where its buffers live: cpus_allowed and
// numa_cpu_nodes become the job thread's CPU set; numa_mem_policy binds the
// I/O buffers to NUMA nodes (a CXL memory node among them) with mbind. Node
// CPU lists are read from sysfs under a root the tests can replace.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../job/job_spec.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

inline constexpr const char* kSysNodeRoot = "/sys/devices/system/node";

// The CPUs a job may run on: cpus_allowed, the CPUs of numa_cpu_nodes, or
// both intersected; empty when neither is set. ENOENT names a node that
// does not exist, EINVAL an empty intersection.
Result<std::vector<int>> job_cpus(const JobSpec& job, const std::string& node_root = kSysNodeRoot);

// Pins the calling thread to `cpus` (a no-op when empty).
Result<void> pin_thread(const std::vector<int>& cpus);

// Applies numa_mem_policy to page-aligned buffers of `bytes` each, moving
// pages already there. ENOENT names a node that does not exist.
Result<void> bind_buffers(std::span<std::byte*> buffers, std::size_t bytes, const NumaMemPolicy& policy,
                          const std::string& node_root = kSysNodeRoot);

}  // namespace cxlpool::io
