// SPDX-License-Identifier: Apache-2.0
// Run-time probe of the CUDA GpuVmm backend (cls "GpuVmm", name "cuda").
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::cuda {

// Loads the driver and calls cuInit. Outcomes:
//  - not present: libcuda.so.1 missing ("libcuda.so.1 not found (no NVIDIA
//    driver)"), cuInit reports no device, or no device supports the virtual
//    memory management (VMM) API the backend is built on;
//  - failed: the driver is there but cannot be loaded or initialised;
//  - available: "N device(s): <name> (sm_XY, N GiB), driver X.Y,
//    VMM supported: yes|no|K of N, host-NUMA alloc: yes|no|K of N".
hal::BackendReport probe_cuda();

}  // namespace cxlpool::cuda
