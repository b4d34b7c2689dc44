// SPDX-License-Identifier: Apache-2.0
// Registers the cuda backend (GpuVmm through the CUDA driver's virtual
// memory management, libcuda loaded at run time; its copy engine fills
// device memory from host bytes; it exports host-NUMA memory for the
// daemon's GpuHostAlloc) with lib/hal's registry.
// Preferred over host: when a GPU is there, KV arenas live on it.
#include "cuda_copy_engine.hpp"
#include "cuda_probe.hpp"
#include "cuda_vmm.hpp"
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"

namespace cxlpool::cuda {
namespace {

Result<hal::GpuHostMemory> export_host_memory(int node, std::uint64_t bytes, int device) {
  auto exported = export_host_numa(node, bytes, device);
  if (!exported) return tl::unexpected(exported.error());
  return hal::GpuHostMemory{std::move(exported->fd), exported->bytes};
}

}  // namespace
}  // namespace cxlpool::cuda

CXLPOOL_REGISTER_BACKEND(cuda, cxlpool::hal::GpuVmmOps, "cuda", 10, &cxlpool::cuda::probe_cuda,
                         (cxlpool::hal::GpuVmmOps{&cxlpool::cuda::make_cuda_vmm, &cxlpool::cuda::open_cuda_copy_engine,
                                                  &cxlpool::cuda::export_host_memory}))
