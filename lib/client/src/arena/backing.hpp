// SPDX-License-Identifier: Apache-2.0
// Where the arena's physical memory comes from, in pieces of region_bytes:
// the daemon (a leased pool region on a tier, its memfd imported into the
// GpuVmm) or the backend itself (GpuVmm::create: device memory for cuda, an
// anonymous memfd for host, used by tests and benchmarks without a daemon).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "cxlpool/cxlpool.h"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"
#include "gpu_host_alloc.hpp"

namespace cxlpool::client::arena {

struct Backing {
  hal::VmmHandle handle = 0;
  uint64_t bytes = 0;
  cxlpool_region* region = nullptr;  // daemon backing only
};

class BackingSource {
 public:
  virtual ~BackingSource() = default;
  virtual Result<Backing> acquire(hal::GpuVmm& vmm, uint64_t bytes) = 0;
  virtual void release(hal::GpuVmm& vmm, Backing& backing) = 0;
  // Gives the memory of [offset, offset+bytes) back to the system while the
  // piece stays allocated (nothing maps it any more). Best effort.
  virtual void discard(const Backing& backing, uint64_t offset, uint64_t bytes) = 0;
  virtual uint32_t tier() const = 0;  // UINT32_MAX when not a daemon tier
};

// Leased regions from cxlpoold on `tier_id` (UINT32_MAX: the first DRAM
// tier, looked up at creation). The client must outlive the source.
Result<std::unique_ptr<BackingSource>> make_daemon_backing(cxlpool_client* client, uint32_t tier_id);

// The backend's own memory (GpuVmm::create).
std::unique_ptr<BackingSource> make_own_backing();

// Pinned host memory exported by the CUDA driver as POSIX descriptors, one
// per piece, imported with GpuVmm::import_fd (the cuda backend on a daemon
// tier). `alloc` gives the descriptor for a piece of at least the bytes
// asked; the import keeps the memory, the descriptor is closed after it.
using GpuHostAllocFn = std::function<Result<GpuHostMemory>(uint64_t bytes)>;
std::unique_ptr<BackingSource> make_gpu_host_backing(GpuHostAllocFn alloc, uint32_t tier_id);

// make_gpu_host_backing over the daemon's GpuHostAlloc on `tier_id` for CUDA
// device `device`. The client must outlive the source.
Result<std::unique_ptr<BackingSource>> make_daemon_gpu_host_backing(cxlpool_client* client, uint32_t tier_id,
                                                                    int device);

}  // namespace cxlpool::client::arena
