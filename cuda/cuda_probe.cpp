// SPDX-License-Identifier: Apache-2.0
#include "cuda_probe.hpp"

#include <cerrno>
#include <string>

#include "driver_api.hpp"

namespace cxlpool::cuda {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

struct DeviceFacts {
  std::string description;  // "<name> (sm_XY, N GiB)"
  bool vmm = false;
  bool host_numa = false;
};

Result<int> attribute(const DriverApi& api, CUdevice_attribute attr, CUdevice dev) {
  int value = 0;
  CXLPOOL_CU_TRY(api, device_get_attribute, &value, attr, dev);
  return value;
}

Result<DeviceFacts> describe(const DriverApi& api, int ordinal) {
  CUdevice dev = 0;
  CXLPOOL_CU_TRY(api, device_get, &dev, ordinal);
  char name[256] = {};
  CXLPOOL_CU_TRY(api, device_get_name, name, sizeof(name) - 1, dev);
  size_t total = 0;
  CXLPOOL_CU_TRY(api, device_total_mem, &total, dev);
  auto major = attribute(api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  if (!major) return tl::unexpected(major.error());
  auto minor = attribute(api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  if (!minor) return tl::unexpected(minor.error());
  auto vmm = attribute(api, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  if (!vmm) return tl::unexpected(vmm.error());
  // Older drivers do not know this attribute (CUDA_ERROR_INVALID_VALUE):
  // that simply means no host-NUMA allocations.
  auto host_numa =
      attribute(api, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);

  DeviceFacts facts;
  facts.description = std::string(name) + " (sm_" + std::to_string(*major) +
                      std::to_string(*minor) + ", " + std::to_string((total + kGiB / 2) / kGiB) +
                      " GiB)";
  facts.vmm = *vmm != 0;
  facts.host_numa = host_numa && *host_numa != 0;
  return facts;
}

// A report of the driver failing to load or start: not present when its
// error is `absent_code` (no library, no device), failed otherwise.
hal::BackendReport load_failure(hal::BackendReport report, const Error& error, int absent_code) {
  report.state =
      error.code == absent_code ? hal::BackendState::kNotPresent : hal::BackendState::kFailed;
  report.detail = error.message;
  return report;
}

std::string yes_no_count(int yes, int total) {
  if (yes == total) return "yes";
  if (yes == 0) return "no";
  return std::to_string(yes) + " of " + std::to_string(total);
}

}  // namespace

hal::BackendReport probe_cuda() {
  hal::BackendReport report{"GpuVmm", "cuda", hal::BackendState::kNotPresent, ""};
  auto loaded = load_driver_api();
  if (!loaded) return load_failure(report, loaded.error(), ENOENT);
  auto api = init_driver_api();
  if (!api) return load_failure(report, api.error(), ENODEV);
  const DriverApi& cu = **api;

  int count = 0;
  if (const CUresult r = cu.device_get_count(&count); r != CUDA_SUCCESS) {
    report.state = hal::BackendState::kFailed;
    report.detail = cu_error(cu, "cuDeviceGetCount", r).message;
    return report;
  }
  if (count == 0) {
    report.detail = "no CUDA devices";
    return report;
  }

  std::string devices;
  int vmm = 0;
  int host_numa = 0;
  for (int i = 0; i < count; ++i) {
    auto facts = describe(cu, i);
    if (!facts) {
      report.state = hal::BackendState::kFailed;
      report.detail = "device " + std::to_string(i) + ": " + facts.error().message;
      return report;
    }
    if (i > 0) devices += ", ";
    devices += facts->description;
    vmm += facts->vmm ? 1 : 0;
    host_numa += facts->host_numa ? 1 : 0;
  }
  report.detail = std::to_string(count) + " device(s): " + devices + ", driver " +
                  std::to_string(cu.driver_version / 1000) + "." +
                  std::to_string(cu.driver_version % 1000 / 10) +
                  ", VMM supported: " + yes_no_count(vmm, count) +
                  ", host-NUMA alloc: " + yes_no_count(host_numa, count);
  // The backend maps memory with cuMemCreate/cuMemMap; without VMM there is
  // nothing it can do on this host.
  report.state = vmm > 0 ? hal::BackendState::kAvailable : hal::BackendState::kNotPresent;
  return report;
}

}  // namespace cxlpool::cuda
