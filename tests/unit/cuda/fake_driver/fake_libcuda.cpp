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
//   checkpoint      one_device whose process checkpoint API works (a state
//                   machine per pid; device memory is host memory) and that
//                   also exports the entry points a program calls by name,
//                   for ckpt_gpu_test's run through its steps on any machine
//   checkpoint_host_pid  checkpoint, but restoring a process whose pid in its
//                   own namespace differs from the caller's view of it fails
//                   (CUDA_ERROR_INVALID_VALUE), as a driver that names the
//                   process by its pid on both sides would
// one_device knows the process checkpoint API but supports none of it; the
// other scenarios are older drivers without it.
// Entry points a scenario does not implement return CUDA_ERROR_NOT_SUPPORTED.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <signal.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
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

bool checkpoint_scenario() { return scenario().rfind("checkpoint", 0) == 0; }

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
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_STATE: *name = "CUDA_ERROR_ILLEGAL_STATE"; return CUDA_SUCCESS;
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

// scenario "checkpoint": the driver's process states, kept by the process
// that calls the API. A process it has not seen yet is RUNNING, unless it
// lives in a pid namespace below the caller's (NSpid lists more than one
// pid): that is a restored clone of a checkpointed one, CHECKPOINTED.
std::mutex states_mutex;
std::map<int, CUprocessState>& states() {
  static std::map<int, CUprocessState> s;
  return s;
}
// How many pids /proc/PID/status's NSpid lists, and whether all are `pid`.
struct NsPids {
  int levels = 0;
  bool same = true;
};
NsPids ns_pids(int pid) {
  NsPids out;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return out;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "NSpid:", 6) != 0) continue;
    char* p = line + 6;
    for (;;) {
      char* end = nullptr;
      const long v = std::strtol(p, &end, 10);
      if (end == p) break;
      ++out.levels;
      if (v != pid) out.same = false;
      p = end;
    }
  }
  std::fclose(f);
  return out;
}

CUprocessState first_state(int pid) {
  return ns_pids(pid).levels > 1 ? CU_PROCESS_STATE_CHECKPOINTED : CU_PROCESS_STATE_RUNNING;
}

CUresult with_state(int pid, CUprocessState from, CUprocessState to) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(states_mutex);
  auto [it, added] = states().try_emplace(pid, first_state(pid));
  if (it->second != from) return CUDA_ERROR_ILLEGAL_STATE;
  it->second = to;
  return CUDA_SUCCESS;
}

CUresult fake_restore_thread_id(int pid, int* tid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return CUDA_ERROR_INVALID_VALUE;
  *tid = pid;
  return CUDA_SUCCESS;
}

CUresult fake_get_state(int pid, CUprocessState* state) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(states_mutex);
  const auto it = states().find(pid);
  *state = it != states().end() ? it->second : first_state(pid);
  return CUDA_SUCCESS;
}

CUresult fake_lock(int pid, CUcheckpointLockArgs*) {
  return with_state(pid, CU_PROCESS_STATE_RUNNING, CU_PROCESS_STATE_LOCKED);
}
CUresult fake_checkpoint(int pid, CUcheckpointCheckpointArgs*) {
  return with_state(pid, CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_CHECKPOINTED);
}
CUresult fake_restore(int pid, CUcheckpointRestoreArgs*) {
  if (scenario() == "checkpoint_host_pid" && !ns_pids(pid).same) return CUDA_ERROR_INVALID_VALUE;
  return with_state(pid, CU_PROCESS_STATE_CHECKPOINTED, CU_PROCESS_STATE_LOCKED);
}
CUresult fake_unlock(int pid, CUcheckpointUnlockArgs*) {
  return with_state(pid, CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_RUNNING);
}

const Implemented kCheckpointImplemented[] = {
    {"cuCheckpointProcessGetRestoreThreadId", reinterpret_cast<void*>(&fake_restore_thread_id)},
    {"cuCheckpointProcessGetState", reinterpret_cast<void*>(&fake_get_state)},
    {"cuCheckpointProcessLock", reinterpret_cast<void*>(&fake_lock)},
    {"cuCheckpointProcessCheckpoint", reinterpret_cast<void*>(&fake_checkpoint)},
    {"cuCheckpointProcessRestore", reinterpret_cast<void*>(&fake_restore)},
    {"cuCheckpointProcessUnlock", reinterpret_cast<void*>(&fake_unlock)},
};

const Known kKnownCheckpoint[] = {
#define CXLPOOL_FAKE_KNOWN(field, symbol, version) \
  {#symbol, reinterpret_cast<void*>(&Unsupported<PFN_##symbol##_v##version>::call)},
    CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS(CXLPOOL_FAKE_KNOWN)
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
  for (const Implemented& i : kCheckpointImplemented) {
    if (*pfn == nullptr && checkpoint_scenario() && std::strcmp(i.symbol, symbol) == 0) *pfn = i.fn;
  }
  for (const Known& k : kKnownCheckpoint) {
    if (*pfn == nullptr && scenario() == "one_device" && std::strcmp(k.symbol, symbol) == 0) {
      *pfn = k.unsupported;
    }
  }
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// scenario "checkpoint": what a program that calls the driver by name uses
// (ckpt_gpu_target). Device memory is anonymous host memory.
__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) { return fake_init(flags); }
__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult error, const char** name) {
  return fake_get_error_name(error, name);
}
__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  return fake_device_get(dev, ordinal);
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  return fake_primary_ctx_retain(ctx, dev);
}
__attribute__((visibility("default"))) CUresult cuCtxSetCurrent(CUcontext ctx) { return fake_ctx_set_current(ctx); }
__attribute__((visibility("default"))) CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  if (!checkpoint_scenario()) return CUDA_ERROR_NOT_SUPPORTED;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  if (!checkpoint_scenario()) return CUDA_ERROR_NOT_SUPPORTED;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  if (!checkpoint_scenario()) return CUDA_ERROR_NOT_SUPPORTED;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

// Test hook: the cudaVersion the loader asked `symbol` at, or -1.
__attribute__((visibility("default"))) int cxlpool_fake_cuda_requested_version(
    const char* symbol) {
  std::lock_guard<std::mutex> lock(requested_mutex);
  const auto it = requested().find(symbol);
  return it == requested().end() ? -1 : it->second;
}

}  // extern "C"
