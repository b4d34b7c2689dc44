// SPDX-License-Identifier: Apache-2.0
// hal::GpuVmm for host memory: a reservation is anonymous PROT_NONE address
// space; physical memory is a file descriptor (a daemon region's memfd, or
// a memfd of our own from create()) mapped MAP_FIXED|MAP_SHARED into it.
// Unmapping puts a PROT_NONE anonymous mapping back, so the range stays
// reserved and nobody else's mmap can land in it.
#pragma once

#include <memory>

#include "cxlpool/hal/gpu_vmm.hpp"

namespace cxlpool::drivers {

// 64 KiB granularity (kHostVmmGranularity). Each map() is one mmap call; the
// kernel merges it into its neighbour's VMA when both map the same file at
// contiguous offsets, else it is a VMA of its own (and the PROT_NONE hole
// after it another): callers that map many scattered pieces are bounded by
// vm.max_map_count. Hitting that limit fails map()/unmap() with ENOMEM and
// a message naming vm.max_map_count and the process's mapping count.
std::unique_ptr<hal::GpuVmm> make_host_vmm();

}  // namespace cxlpool::drivers
