// SPDX-License-Identifier: Apache-2.0
// Registers the host backend (GpuVmm over host memory: a PROT_NONE
// reservation backed by file descriptors; runs everywhere) with lib/hal's
// registry.
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"
#include "host_vmm.hpp"
#include "host_vmm_probe.hpp"

namespace cxlpool::drivers {
namespace {

Result<std::unique_ptr<hal::GpuVmm>> open_host_vmm(int /*device: host memory has none*/) { return make_host_vmm(); }

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(host, cxlpool::hal::GpuVmmOps, "host", 20, &cxlpool::drivers::probe_host_vmm,
                         (cxlpool::hal::GpuVmmOps{&cxlpool::drivers::open_host_vmm}))
