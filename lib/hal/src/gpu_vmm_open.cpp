// SPDX-License-Identifier: Apache-2.0
// hal::open_gpu_vmm, hal::open_gpu_copy_engine and
// hal::export_gpu_host_memory: the one place that chooses a GpuVmm backend.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"

namespace cxlpool::hal {
namespace {

// No GPU, no driver, no such device: the next backend may still run.
bool next_backend_may_run(const BackendDescriptor&, const Error&) { return true; }

}  // namespace

Result<std::unique_ptr<GpuVmm>> open_gpu_vmm(std::string_view backend, int device, BackendSkips* skipped) {
  return open_backend<std::unique_ptr<GpuVmm>>(
      BackendClass::kGpuVmm, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<GpuVmmOps, &GpuVmmOps::open>(d, "no GpuVmm implementation", device);
      },
      next_backend_may_run);
}

Result<std::unique_ptr<GpuCopyEngine>> open_gpu_copy_engine(std::string_view backend, int device,
                                                            BackendSkips* skipped) {
  return open_backend<std::unique_ptr<GpuCopyEngine>>(
      BackendClass::kGpuVmm, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<GpuVmmOps, &GpuVmmOps::open_copy_engine>(
            d, "no device memory of its own, so no copy engine", device);
      },
      next_backend_may_run);
}

Result<GpuHostMemory> export_gpu_host_memory(int node, std::uint64_t bytes, int device, BackendSkips* skipped) {
  auto exporters = backends_offering(BackendClass::kGpuVmm, "export host memory",
                                     &has_operation<GpuVmmOps, &GpuVmmOps::export_host_memory>, skipped);
  if (!exporters) return tl::unexpected(exporters.error());
  // The first exporter answers: its failure (no GPU, no driver) is the
  // caller's answer, as no other backend's memory would suit that GPU.
  const BackendDescriptor& d = *exporters->front();
  auto memory = backend_ops<GpuVmmOps>(d)->export_host_memory(node, bytes, device);
  if (!memory) return tl::unexpected(backend_error(d, memory.error()));
  return memory;
}

}  // namespace cxlpool::hal
