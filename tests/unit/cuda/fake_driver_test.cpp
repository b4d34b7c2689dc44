// SPDX-License-Identifier: Apache-2.0
// The loader, the probe and the device context against the fake libcuda.so.1
// (fake_driver/), one driver scenario per process: meson runs this executable
// once per scenario with LD_LIBRARY_PATH and CXLPOOL_FAKE_CUDA set.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "cuda_probe.hpp"
#include "cuda_vmm.hpp"
#include "device_context.hpp"
#include "driver_api.hpp"
#include "kernels.hpp"

namespace cxlpool::cuda {
namespace {

std::string scenario() {
  const char* s = std::getenv("CXLPOOL_FAKE_CUDA");
  return s != nullptr ? s : "";
}

class FakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (scenario().empty()) GTEST_SKIP() << "run through meson (needs CXLPOOL_FAKE_CUDA)";
  }
};

// The cudaVersion the loader asked the fake for `symbol`.
int requested_version(const char* symbol) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return -2;
  using Fn = int (*)(const char*);
  auto fn = reinterpret_cast<Fn>(dlsym(handle, "cxlpool_fake_cuda_requested_version"));
  const int version = fn != nullptr ? fn(symbol) : -3;
  dlclose(handle);
  return version;
}

TEST_F(FakeDriver, ProbeReportsTheScenario) {
  const hal::BackendReport report = probe_cuda();
  EXPECT_EQ(report.cls, "GpuVmm");
  EXPECT_EQ(report.name, "cuda");
  if (scenario() == "no_device") {
    EXPECT_EQ(report.state, hal::BackendState::kNotPresent);
    EXPECT_EQ(report.detail, "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
  } else if (scenario() == "one_device") {
    EXPECT_EQ(report.state, hal::BackendState::kAvailable);
    EXPECT_EQ(report.detail,
              "1 device(s): Fake GPU (sm_90, 80 GiB), driver 13.0, VMM supported: yes, "
              "host-NUMA alloc: no");
  } else if (scenario() == "no_vmm") {
    EXPECT_EQ(report.state, hal::BackendState::kNotPresent);
    EXPECT_EQ(report.detail,
              "1 device(s): Fake GPU (sm_90, 80 GiB), driver 13.0, VMM supported: no, "
              "host-NUMA alloc: no");
  } else if (scenario() == "missing_symbol") {
    EXPECT_EQ(report.state, hal::BackendState::kFailed);
    EXPECT_EQ(report.detail, "cuGetProcAddress(cuMemMap): symbol not found");
  } else {
    FAIL() << "unknown scenario " << scenario();
  }
}

TEST_F(FakeDriver, EntryPointsAreResolvedAtTheirPinnedAbiVersion) {
  auto api = load_driver_api();
  if (scenario() == "missing_symbol") {
    ASSERT_FALSE(api);
    EXPECT_EQ(api.error().code, ENOSYS);
    return;
  }
  ASSERT_TRUE(api) << api.error().message;
  EXPECT_EQ((*api)->driver_version, 13000);
  // cuCtxSynchronize gained a CUcontext parameter at 13000; cuda.h declares
  // the old one, so asking for anything newer than 2000 would be an ABI bug.
  EXPECT_EQ(requested_version("cuCtxSynchronize"), 2000);
  EXPECT_EQ(requested_version("cuMemAlloc"), 3020);
  EXPECT_EQ(requested_version("cuDevicePrimaryCtxRelease"), 11000);
  EXPECT_EQ(requested_version("cuMemCreate"), 10020);
  EXPECT_EQ(requested_version("cuCtxCreate"), -1);
}

TEST_F(FakeDriver, CheckpointApiIsOptional) {
  auto api = load_driver_api();
  if (scenario() == "missing_symbol") GTEST_SKIP() << "the driver does not load";
  ASSERT_TRUE(api) << api.error().message;
  const auto available = checkpoint_api_available(**api);
  if (scenario() == "one_device") {
    ASSERT_TRUE(available) << available.error().message;
    EXPECT_NE((*api)->checkpoint_process_lock, nullptr);
    EXPECT_NE((*api)->checkpoint_process_get_restore_thread_id, nullptr);
    EXPECT_EQ(requested_version("cuCheckpointProcessRestore"), 12080);
    // The fake implements none of them: a call reports the driver's refusal.
    const Error e = cu_error(**api, "checkpoint_process_lock",
                             (*api)->checkpoint_process_lock(1, nullptr));
    EXPECT_EQ(e.message,
              "cuCheckpointProcessLock: CUDA_ERROR_NOT_SUPPORTED (operation not supported)");
  } else {
    ASSERT_FALSE(available);
    EXPECT_EQ(available.error().code, ENOSYS);
    EXPECT_EQ(available.error().message,
              "cuGetProcAddress(cuCheckpointProcessGetRestoreThreadId): symbol not found; the "
              "CUDA checkpoint API needs driver 570 (CUDA 12.8) or newer, this one is CUDA 13.0");
    EXPECT_EQ((*api)->checkpoint_process_lock, nullptr);
    EXPECT_EQ((*api)->checkpoint_process_unlock, nullptr);
  }
}

TEST_F(FakeDriver, DeviceContextOpensAndKernelLoadFailsWithTheDriversReason) {
  if (scenario() != "one_device") GTEST_SKIP() << "needs a device";
  auto ctx = DeviceContext::open(0);
  ASSERT_TRUE(ctx) << ctx.error().message;
  EXPECT_EQ(ctx->device(), 0);
  auto missing = DeviceContext::open(1);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, EINVAL);

  // The fake declines the (well-formed) fatbin the way a driver does for a
  // GPU none of the built architectures fits.
  auto kernels = Kernels::load(*ctx);
  ASSERT_FALSE(kernels);
  EXPECT_EQ(kernels.error().message,
            "kernel module kv_copy: cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU (no kernel "
            "image is available for execution on the device)");

  // Calls the fake does not implement surface as errors, never crashes.
  auto mem = ctx->alloc(4096);
  ASSERT_FALSE(mem);
  EXPECT_EQ(mem.error().code, ENOTSUP);
  EXPECT_EQ(mem.error().message, "cuMemAlloc: CUDA_ERROR_NOT_SUPPORTED (operation not supported)");
}

TEST_F(FakeDriver, CudaVmmFactoryFailsWithTheReason) {
  auto vmm = make_cuda_vmm(0);
  ASSERT_FALSE(vmm);
  if (scenario() == "no_device") {
    EXPECT_EQ(vmm.error().code, ENODEV);
  } else if (scenario() == "no_vmm") {
    EXPECT_EQ(vmm.error().code, ENOTSUP);
    EXPECT_EQ(vmm.error().message, "cuda: device 0 does not support virtual memory management");
  } else if (scenario() == "one_device") {
    // The fake has no cuMemGetAllocationGranularity.
    EXPECT_EQ(vmm.error().code, ENOTSUP);
    EXPECT_EQ(vmm.error().message,
              "cuMemGetAllocationGranularity: CUDA_ERROR_NOT_SUPPORTED (operation not supported)");
    // Nor host-NUMA support (the attribute is unknown to it).
    auto exported = export_host_numa(0, 1 << 20);
    ASSERT_FALSE(exported);
    EXPECT_EQ(exported.error().code, ENOTSUP);
  } else if (scenario() == "missing_symbol") {
    EXPECT_EQ(vmm.error().code, ENOSYS);
  }
}

}  // namespace
}  // namespace cxlpool::cuda
