// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc on the control connection: pinned host memory that cxlpoold
// allocates with the CUDA driver on a tier's NUMA node, received as a POSIX
// file descriptor for GpuVmm::import_fd.
#pragma once

#include <cstdint>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::client::arena {

struct GpuHostMemory {
  UniqueFd fd;
  uint64_t bytes = 0;  // the allocation's size: >= the request's (driver granularity)
  uint32_t numa_node = 0;
};

// Errors: the daemon's (EINVAL unknown tier or one without a node of its own,
// E2BIG, ENOTSUP daemon without CUDA, ENODEV no GPU or driver); EPROTO for a
// reply that is not GpuHostAllocReply with one descriptor and enough bytes.
Result<GpuHostMemory> gpu_host_alloc(Connection& conn, uint32_t tier_id, uint32_t device, uint64_t bytes);

}  // namespace cxlpool::client::arena
