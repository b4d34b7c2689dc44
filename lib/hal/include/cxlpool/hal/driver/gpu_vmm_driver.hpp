// SPDX-License-Identifier: Apache-2.0
// Driver SDK for GpuVmm backends (drivers/gpu/host, cuda/). Users open one
// with hal::open_gpu_vmm.
#pragma once

#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"

namespace cxlpool::hal {

struct GpuVmmOps {
  static constexpr BackendClass kClass = BackendClass::kGpuVmm;
  // `device`: the GPU ordinal (backends without devices ignore it).
  Result<std::unique_ptr<GpuVmm>> (*open)(int device);
};

}  // namespace cxlpool::hal
