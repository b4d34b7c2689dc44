// SPDX-License-Identifier: Apache-2.0
// hal::open_gpu_vmm: the one place that chooses a GpuVmm backend.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"

namespace cxlpool::hal {

Result<std::unique_ptr<GpuVmm>> open_gpu_vmm(std::string_view backend, int device, BackendSkips* skipped) {
  return open_backend<std::unique_ptr<GpuVmm>>(
      BackendClass::kGpuVmm, backend, skipped,
      [&](const BackendDescriptor& d) -> Result<std::unique_ptr<GpuVmm>> {
        const auto* ops = backend_ops<GpuVmmOps>(d);
        if (ops == nullptr || ops->open == nullptr) return fail(ENOTSUP, "no GpuVmm implementation");
        return ops->open(device);
      },
      // No GPU, no driver, no such device: the next backend may still run.
      [](const BackendDescriptor&, const Error&) { return true; });
}

}  // namespace cxlpool::hal
