// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc: pinned host memory on a tier's NUMA node, allocated by the
// CUDA driver (CU_MEM_LOCATION_TYPE_HOST_NUMA) and exported as a POSIX file
// descriptor for a client's CUDA KV arena to import.
//
// Once exported, the memory lives as long as any descriptor or import of it,
// and the daemon keeps no handle that would tell it when the client lets go.
// So each allocation is charged to the session that asked, and to its uid,
// until that session closes (the memory may outlive it: a client that
// wants more must reconnect, and the limit still bounds what one uid holds
// at any moment through live sessions). max_region_size bounds a single
// request, [pool] gpu_host_bytes_per_uid what one uid's sessions hold. The
// tier's own accounting does not see these bytes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/messages.hpp"
#include "tier.hpp"

namespace cxlpool::daemon {

// Who asks, and how much their uid may hold (0: no limit).
struct GpuHostRequester {
  uint64_t session_id = 0;
  uid_t uid = 0;
  uint64_t limit_per_uid = 0;
};

struct GpuHostAllocation {
  proto::GpuHostAllocReply reply;
  UniqueFd fd;
};

// Member, and its metric's name after "gpu.".
// clang-format off
#define CXLPOOL_GPU_HOST_COUNTERS(X)                 \
  X(allocs,           "host_allocs")                 \
  X(bytes,            "host_alloc_bytes")            \
  X(failures,         "host_alloc_failures")         \
  X(quota_rejections, "host_alloc_quota_rejections")
// clang-format on

struct GpuHostCounters {
  CXLPOOL_GPU_HOST_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_GPU_HOST_COUNTERS)
};

class GpuHostAllocator {
 public:
  // Errors: EINVAL for an unknown tier or one without a NUMA node of its own;
  // E2BIG above `max_region_size`; EDQUOT when the uid's sessions would hold
  // more than `who.limit_per_uid`; ENOTSUP when no GpuVmm backend here
  // exports host memory (cuda not compiled in, or excluded by
  // CXLPOOL_BACKENDS) or the device cannot allocate host-NUMA memory;
  // ENODEV with the driver's reason when there is no driver or no such GPU;
  // the driver's error otherwise. Runs on the event loop: the first call loads the driver.
  Result<GpuHostAllocation> allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                     const GpuHostRequester& who, const proto::GpuHostAlloc& request);
  // The session closed: its allocations stop counting against its uid.
  void close_session(uint64_t session_id);
  [[nodiscard]] uint64_t charged_to_uid(uid_t uid) const;

  // The GpuHostCounters, then gpu.host_alloc_charged_bytes (held by open
  // sessions now).
  void add_counters(std::vector<proto::Counter>& out) const;

 private:
  struct Charge {
    uid_t uid = 0;
    uint64_t bytes = 0;
  };
  Result<GpuHostAllocation> try_allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                         const GpuHostRequester& who, const proto::GpuHostAlloc& request);

  std::unordered_map<uint64_t, Charge> by_session_;
  std::unordered_map<uid_t, uint64_t> by_uid_;
  uint64_t charged_ = 0;
  GpuHostCounters counters_;
};

}  // namespace cxlpool::daemon
