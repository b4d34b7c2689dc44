// SPDX-License-Identifier: Apache-2.0
// A stand-in libcuda.so.1 for machines without the NVIDIA driver, so the
// loader and the probe run their real code paths in CI. It exports only
// cuGetProcAddress_v2 (like the driver, everything is reached through it)
// and records the ABI version asked for each symbol. CXLPOOL_FAKE_CUDA picks
// the scenario:
//   no_device       cuInit fails with CUDA_ERROR_NO_DEVICE
//   one_device      one sm_90 device, 80 GiB, VMM yes, host-NUMA no
//   no_vmm          like one_device but without VMM support
//   missing_symbol  cuMemMap is unknown to this "driver"
// Entry points a scenario does not implement return CUDA_ERROR_NOT_SUPPORTED.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "driver_api.hpp"

namespace {

std::string scenario() {
  const char* s = std::getenv("CXLPOOL_FAKE_CUDA");
  return s != nullptr ? s : "";
}

template <typename Fn>
struct Unsupported;
template <typename... Args>
struct Unsupported<CUresult (*)(Args...)> {
  static CUresult call(Args...) { return CUDA_ERROR_NOT_SUPPORTED; }
};

std::mutex requested_mutex;
std::map<std::string, int>& requested() {
  static std::map<std::string, int> versions;
  return versions;
}

bool initialised = false;

CUresult fake_init(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (scenario() == "no_device") return CUDA_ERROR_NO_DEVICE;
  initialised = true;
  return CUDA_SUCCESS;
}

CUresult fake_driver_get_version(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult fake_get_error_name(CUresult error, const char** name) {
  switch (error) {
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult fake_get_error_string(CUresult error, const char** text) {
  switch (error) {
    case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *text = "operation not supported"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
      *text = "no kernel image is available for execution on the device";
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult fake_device_get_count(int* count) {
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult fake_device_get(CUdevice* dev, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult fake_device_get_name(char* name, int len, CUdevice dev) {
  if (dev != 0 || len < 1) return CUDA_ERROR_INVALID_VALUE;
  std::strncpy(name, "Fake GPU", size_t(len));
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult fake_device_total_mem(size_t* bytes, CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult fake_device_get_attribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      *value = scenario() == "no_vmm" ? 0 : 1;
      return CUDA_SUCCESS;
    // Like a driver older than 12.2: the attribute is unknown.
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      return CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

int fake_context_storage;

CUresult fake_primary_ctx_retain(CUcontext* ctx, CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(&fake_context_storage);
  return CUDA_SUCCESS;
}

CUresult fake_ctx_set_current(CUcontext ctx) {
  return ctx == reinterpret_cast<CUcontext>(&fake_context_storage) ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_CONTEXT;
}

// Checks that the loader hands over a fatbin, then declines it as a driver
// for a GPU none of the built architectures fits would.
CUresult fake_module_load_data(CUmodule* module, const void* image) {
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof(magic));
  *module = nullptr;
  return magic == 0xBA55ED50 ? CUDA_ERROR_NO_BINARY_FOR_GPU : CUDA_ERROR_INVALID_IMAGE;
}

struct Implemented {
  const char* symbol;
  void* fn;
};

const Implemented kImplemented[] = {
    {"cuInit", reinterpret_cast<void*>(&fake_init)},
    {"cuDriverGetVersion", reinterpret_cast<void*>(&fake_driver_get_version)},
    {"cuGetErrorName", reinterpret_cast<void*>(&fake_get_error_name)},
    {"cuGetErrorString", reinterpret_cast<void*>(&fake_get_error_string)},
    {"cuDeviceGetCount", reinterpret_cast<void*>(&fake_device_get_count)},
    {"cuDeviceGet", reinterpret_cast<void*>(&fake_device_get)},
    {"cuDeviceGetName", reinterpret_cast<void*>(&fake_device_get_name)},
    {"cuDeviceTotalMem", reinterpret_cast<void*>(&fake_device_total_mem)},
    {"cuDeviceGetAttribute", reinterpret_cast<void*>(&fake_device_get_attribute)},
    {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&fake_primary_ctx_retain)},
    {"cuCtxSetCurrent", reinterpret_cast<void*>(&fake_ctx_set_current)},
    {"cuModuleLoadData", reinterpret_cast<void*>(&fake_module_load_data)},
};

// Every entry point the loader knows, with an "unsupported" body of the
// right signature.
struct Known {
  const char* symbol;
  void* unsupported;
};

const Known kKnown[] = {
#define CXLPOOL_FAKE_KNOWN(field, symbol, version) \
  {#symbol, reinterpret_cast<void*>(&Unsupported<PFN_##symbol##_v##version>::call)},
    CXLPOOL_CUDA_DRIVER_FUNCTIONS(CXLPOOL_FAKE_KNOWN)
#undef CXLPOOL_FAKE_KNOWN
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
  (void)flags;
  *pfn = nullptr;
  {
    std::lock_guard<std::mutex> lock(requested_mutex);
    requested()[symbol] = cuda_version;
  }
  if (scenario() == "missing_symbol" && std::strcmp(symbol, "cuMemMap") == 0) {
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (const Implemented& i : kImplemented) {
    if (std::strcmp(i.symbol, symbol) == 0) *pfn = i.fn;
  }
  for (const Known& k : kKnown) {
    if (*pfn == nullptr && std::strcmp(k.symbol, symbol) == 0) *pfn = k.unsupported;
  }
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// Test hook: the cudaVersion the loader asked `symbol` at, or -1.
__attribute__((visibility("default"))) int cxlpool_fake_cuda_requested_version(
    const char* symbol) {
  std::lock_guard<std::mutex> lock(requested_mutex);
  const auto it = requested().find(symbol);
  return it == requested().end() ? -1 : it->second;
}

}  // extern "C"
