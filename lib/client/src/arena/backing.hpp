// SPDX-License-Identifier: Apache-2.0
// Where the arena's physical memory comes from, in pieces of region_bytes:
// the daemon (a leased pool region on a tier, its memfd imported into the
// GpuVmm) or the backend itself (GpuVmm::create: device memory for cuda, an
// anonymous memfd for host, used by tests and benchmarks without a daemon).
#pragma once

#include <cstdint>
#include <memory>

#include "cxlpool/cxlpool.h"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"

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

}  // namespace cxlpool::client::arena
