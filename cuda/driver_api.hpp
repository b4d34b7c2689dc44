// SPDX-License-Identifier: Apache-2.0
// The CUDA driver API, loaded at run time. Nothing in the project links
// libcuda (a binary linked to it, or to the toolkit's stub, cannot start on a
// machine without the NVIDIA driver); instead libcuda.so.1 is dlopen()ed and
// every entry point is resolved through cuGetProcAddress at a pinned ABI
// version.
//
// Internal to cuda/: this header includes cuda.h. Code outside cuda/ uses
// cuda_probe.hpp, device_context.hpp and kernels.hpp, which do not.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::cuda {

// X(field, symbol, version): `field` is a PFN_<symbol>_v<version> from
// cudaTypedefs.h and is resolved with cudaVersion = <version>, so the driver
// hands back exactly that ABI. Resolving with the toolkit's CUDA_VERSION
// instead would be wrong: e.g. for 13000 the driver returns
// cuCtxSynchronize(CUcontext) while cuda.h still declares cuCtxSynchronize(void).
// Pinned versions also keep the backend working on older 11.3+ drivers.
// Contexts are primary contexts only: they are what other CUDA users in the
// same process (the runtime, frameworks) share.
#define CXLPOOL_CUDA_DRIVER_FUNCTIONS(X)                                     \
  X(init, cuInit, 2000)                                                      \
  X(driver_get_version, cuDriverGetVersion, 2020)                            \
  X(get_error_name, cuGetErrorName, 6000)                                    \
  X(get_error_string, cuGetErrorString, 6000)                                \
  X(device_get_count, cuDeviceGetCount, 2000)                                \
  X(device_get, cuDeviceGet, 2000)                                           \
  X(device_get_name, cuDeviceGetName, 2000)                                  \
  X(device_total_mem, cuDeviceTotalMem, 3020)                                \
  X(device_get_attribute, cuDeviceGetAttribute, 2000)                        \
  X(device_primary_ctx_retain, cuDevicePrimaryCtxRetain, 7000)               \
  X(device_primary_ctx_release, cuDevicePrimaryCtxRelease, 11000)            \
  X(ctx_set_current, cuCtxSetCurrent, 4000)                                  \
  X(ctx_get_current, cuCtxGetCurrent, 4000)                                  \
  X(ctx_synchronize, cuCtxSynchronize, 2000)                                 \
  X(module_load_data, cuModuleLoadData, 2000)                                \
  X(module_unload, cuModuleUnload, 2000)                                     \
  X(module_get_function, cuModuleGetFunction, 2000)                          \
  X(func_set_attribute, cuFuncSetAttribute, 9000)                            \
  X(launch_kernel, cuLaunchKernel, 4000)                                     \
  X(mem_alloc, cuMemAlloc, 3020)                                             \
  X(mem_free, cuMemFree, 3020)                                               \
  X(memcpy_htod, cuMemcpyHtoD, 3020)                                         \
  X(memcpy_dtoh, cuMemcpyDtoH, 3020)                                         \
  X(mem_address_reserve, cuMemAddressReserve, 10020)                         \
  X(mem_address_free, cuMemAddressFree, 10020)                               \
  X(mem_create, cuMemCreate, 10020)                                          \
  X(mem_release, cuMemRelease, 10020)                                        \
  X(mem_map, cuMemMap, 10020)                                                \
  X(mem_unmap, cuMemUnmap, 10020)                                            \
  X(mem_set_access, cuMemSetAccess, 10020)                                   \
  X(mem_get_allocation_granularity, cuMemGetAllocationGranularity, 10020)    \
  X(mem_export_to_shareable_handle, cuMemExportToShareableHandle, 10020)     \
  X(mem_import_from_shareable_handle, cuMemImportFromShareableHandle, 10020) \
  X(mem_host_register, cuMemHostRegister, 6050)                              \
  X(mem_host_unregister, cuMemHostUnregister, 4000)                          \
  X(mem_host_get_device_pointer, cuMemHostGetDevicePointer, 3020)            \
  X(mem_host_alloc, cuMemHostAlloc, 2020)                                    \
  X(mem_free_host, cuMemFreeHost, 2000)                                      \
  X(mem_get_info, cuMemGetInfo, 3020)                                        \
  X(stream_create, cuStreamCreate, 2000)                                     \
  X(stream_destroy, cuStreamDestroy, 4000)                                   \
  X(stream_synchronize, cuStreamSynchronize, 2000)                           \
  X(memcpy_htod_async, cuMemcpyHtoDAsync, 3020)                              \
  X(memcpy_dtoh_async, cuMemcpyDtoHAsync, 3020)                              \
  X(memcpy_dtod_async, cuMemcpyDtoDAsync, 3020)                              \
  X(event_create, cuEventCreate, 2000)                                       \
  X(event_destroy, cuEventDestroy, 4000)                                     \
  X(event_record, cuEventRecord, 2000)                                       \
  X(event_query, cuEventQuery, 2000)                                         \
  X(event_synchronize, cuEventSynchronize, 2000)                             \
  X(event_elapsed_time, cuEventElapsedTime, 2000)

// Optional entry points: a driver without them still loads, the field stays
// null and `checkpoint_missing` says why. The process checkpoint API came with
// driver 570 (CUDA 12.8); every call takes the pid of another process.
#define CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS(X)                                              \
  X(checkpoint_process_get_restore_thread_id, cuCheckpointProcessGetRestoreThreadId, 12080) \
  X(checkpoint_process_get_state, cuCheckpointProcessGetState, 12080)                     \
  X(checkpoint_process_lock, cuCheckpointProcessLock, 12080)                              \
  X(checkpoint_process_checkpoint, cuCheckpointProcessCheckpoint, 12080)                  \
  X(checkpoint_process_restore, cuCheckpointProcessRestore, 12080)                        \
  X(checkpoint_process_unlock, cuCheckpointProcessUnlock, 12080)

// Optional entry points that stand alone: null when the driver lacks them
// (callers fall back). cuLaunchKernelEx came with CUDA 11.8; the decode
// kernels use it for programmatic dependent launch.
#define CXLPOOL_CUDA_OPTIONAL_FUNCTIONS(X) X(launch_kernel_ex, cuLaunchKernelEx, 11060)

struct DriverApi {
#define CXLPOOL_CUDA_DECLARE_FIELD(field, symbol, version) \
  PFN_##symbol##_v##version field = nullptr;
  CXLPOOL_CUDA_DRIVER_FUNCTIONS(CXLPOOL_CUDA_DECLARE_FIELD)
  CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS(CXLPOOL_CUDA_DECLARE_FIELD)
  CXLPOOL_CUDA_OPTIONAL_FUNCTIONS(CXLPOOL_CUDA_DECLARE_FIELD)
#undef CXLPOOL_CUDA_DECLARE_FIELD

  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
  // Empty when every CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS entry resolved, else
  // the first that did not and why (all checkpoint fields are then null).
  std::string checkpoint_missing;
};

// Loads libcuda.so.1 and resolves every entry point, once per process (later
// calls return the first outcome; the library is never unloaded). Does not
// call cuInit. Errors: ENOENT "libcuda.so.1 not found (no NVIDIA driver)"
// when the driver is not installed; ELIBBAD with dlerror() when it is there
// but cannot be loaded; ENOSYS naming the entry point the driver lacks.
Result<const DriverApi*> load_driver_api();

// The driver's process checkpoint API, or ENOSYS with the reason it is not
// there ("cuGetProcAddress(cuCheckpointProcessLock): symbol not found; the
// CUDA checkpoint API needs driver 570 or newer, this one is 12.4").
Result<void> checkpoint_api_available(const DriverApi& api);

// cuInit(0) once per process, after load_driver_api(). Errors: the CUresult
// as cu_error() builds it (ENODEV for CUDA_ERROR_NO_DEVICE).
Result<const DriverApi*> init_driver_api();

// "call: CUDA_ERROR_NAME (description)" with an errno that fits the CUresult
// (ENOMEM, EINVAL, ENODEV, ENOTSUP, else EIO).
Error cu_error(const DriverApi& api, const char* call, CUresult result);

// Result<void> of a driver call: `CXLPOOL_CU_TRY(api, mem_free, ptr)` returns
// cu_error() from the enclosing function when the call fails.
#define CXLPOOL_CU_TRY(api, field, ...)                                                      \
  do {                                                                                       \
    const CUresult cxlpool_cu_result_ = (api).field(__VA_ARGS__);                            \
    if (cxlpool_cu_result_ != CUDA_SUCCESS)                                                  \
      return tl::unexpected((::cxlpool::cuda::cu_error((api), #field, cxlpool_cu_result_))); \
  } while (0)

}  // namespace cxlpool::cuda
