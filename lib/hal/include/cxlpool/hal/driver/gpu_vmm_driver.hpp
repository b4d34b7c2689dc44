// SPDX-License-Identifier: Apache-2.0
// Driver SDK for GpuVmm backends (drivers/gpu/host, cuda/). Users open one
// with hal::open_gpu_vmm, and its copy engine with hal::open_gpu_copy_engine.
#pragma once

#include <cstdint>
#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "cxlpool/hal/gpu_copy.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"

namespace cxlpool::hal {

struct GpuVmmOps {
  static constexpr BackendClass kClass = BackendClass::kGpuVmm;
  // `device`: the GPU ordinal (backends without devices ignore it).
  Result<std::unique_ptr<GpuVmm>> (*open)(int device);
  // Device buffers, pinned staging and host-to-device copies on GPU
  // `device`. Null for a backend without device memory of its own (host):
  // open_gpu_copy_engine then answers ENOTSUP for it by name and passes it
  // over when choosing the best.
  Result<std::unique_ptr<GpuCopyEngine>> (*open_copy_engine)(int device) = nullptr;
  // Pinned host memory on NUMA node `node` for GPU `device`, exported as a
  // file descriptor (cuda). Null for a backend that has no such memory.
  Result<GpuHostMemory> (*export_host_memory)(int node, std::uint64_t bytes, int device) = nullptr;
};

}  // namespace cxlpool::hal
