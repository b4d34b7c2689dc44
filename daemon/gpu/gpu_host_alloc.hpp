// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc: pinned host memory on a tier's NUMA node, allocated by the
// CUDA driver (CU_MEM_LOCATION_TYPE_HOST_NUMA) and exported as a POSIX file
// descriptor for a client's CUDA KV arena to import.
//
// The allocation is not charged to the client's quota or to the tier's
// accounting: once exported, the memory lives as long as any descriptor or
// import of it, and the daemon keeps no handle that would tell it when the
// client lets go. max_region_size still bounds a single request.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/messages.hpp"
#include "tier.hpp"

namespace cxlpool::daemon {

struct GpuHostAllocation {
  proto::GpuHostAllocReply reply;
  UniqueFd fd;
};

class GpuHostAllocator {
 public:
  // Errors: EINVAL for an unknown tier or one without a NUMA node of its own;
  // E2BIG above `max_region_size`; ENOTSUP when the daemon was built without
  // CUDA or the device cannot allocate host-NUMA memory; ENODEV with the
  // driver's reason when there is no driver or no such GPU; the driver's
  // error otherwise. Runs on the event loop: the first call loads the driver.
  Result<GpuHostAllocation> allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                     const proto::GpuHostAlloc& request);

  // gpu.host_allocs, gpu.host_alloc_bytes, gpu.host_alloc_failures.
  void add_counters(std::vector<proto::Counter>& out) const;

 private:
  Result<GpuHostAllocation> try_allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                         const proto::GpuHostAlloc& request);

  uint64_t allocs_ = 0;
  uint64_t bytes_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace cxlpool::daemon
