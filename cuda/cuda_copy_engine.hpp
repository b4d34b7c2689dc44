// SPDX-License-Identifier: Apache-2.0
// The cuda backend's hal::GpuCopyEngine (GpuVmmOps::open_copy_engine).
#pragma once

#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_copy.hpp"

namespace cxlpool::cuda {

// DeviceContext, DeviceBuffer, PinnedHostBuffer, HostRegistration and one
// CopyStream on device `device`. Host ranges are registered with
// HostAccess::kDetect, so a read-only mapping is registered read-only.
// Errors: as DeviceContext::open(); CopyStream::create's.
Result<std::unique_ptr<hal::GpuCopyEngine>> open_cuda_copy_engine(int device);

}  // namespace cxlpool::cuda
