// SPDX-License-Identifier: Apache-2.0
// The probe, the loader's error reporting and the embedded kernel images.
// These run on every machine: without a driver they check the "not present"
// path, with one they check the report of the real devices.
#include "cuda_probe.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "driver_api.hpp"
#include "kernel_images.hpp"

namespace cxlpool::cuda {
namespace {

TEST(CudaProbe, ReportAgreesWithTheDriverLoader) {
  const hal::BackendReport report = probe_cuda();
  EXPECT_EQ(report.cls, "GpuVmm");
  EXPECT_EQ(report.name, "cuda");
  EXPECT_FALSE(report.detail.empty());

  auto loaded = load_driver_api();
  if (!loaded) {
    if (loaded.error().code == ENOENT) {
      EXPECT_EQ(report.state, hal::BackendState::kNotPresent);
      EXPECT_EQ(report.detail, "libcuda.so.1 not found (no NVIDIA driver)");
    } else {
      EXPECT_EQ(report.state, hal::BackendState::kFailed);
      EXPECT_EQ(report.detail, loaded.error().message);
    }
    return;
  }
  auto initialised = init_driver_api();
  if (!initialised) {
    EXPECT_NE(report.state, hal::BackendState::kAvailable);
    EXPECT_EQ(report.detail, initialised.error().message);
    EXPECT_NE(report.detail.find("cuInit: "), std::string::npos) << report.detail;
    return;
  }
  int count = 0;
  ASSERT_EQ((*initialised)->device_get_count(&count), CUDA_SUCCESS);
  if (count == 0) {
    EXPECT_EQ(report.state, hal::BackendState::kNotPresent);
    return;
  }
  const std::regex shape(
      std::to_string(count) +
      R"( device\(s\): .+ \(sm_\d+, \d+ GiB\), driver \d+\.\d+, )"
      R"(VMM supported: (yes|no|\d+ of \d+), host-NUMA alloc: (yes|no|\d+ of \d+))");
  EXPECT_TRUE(std::regex_match(report.detail, shape)) << report.detail;
  const bool any_vmm = report.detail.find("VMM supported: no") == std::string::npos;
  EXPECT_EQ(report.state, any_vmm ? hal::BackendState::kAvailable : hal::BackendState::kNotPresent);
}

TEST(CudaProbe, RepeatedProbesAgree) {
  const hal::BackendReport a = probe_cuda();
  const hal::BackendReport b = probe_cuda();
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.detail, b.detail);
}

TEST(CuError, NamesTheCudaCallAndMapsErrno) {
  // A loader that never resolved cuGetErrorName still yields a usable message.
  const DriverApi no_driver;
  const Error oom = cu_error(no_driver, "mem_create", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(oom.code, ENOMEM);
  EXPECT_EQ(oom.message, "cuMemCreate: CUresult 2");
  EXPECT_EQ(cu_error(no_driver, "mem_map", CUDA_ERROR_INVALID_VALUE).code, EINVAL);
  EXPECT_EQ(cu_error(no_driver, "init", CUDA_ERROR_NO_DEVICE).code, ENODEV);
  EXPECT_EQ(cu_error(no_driver, "mem_set_access", CUDA_ERROR_NOT_SUPPORTED).code, ENOTSUP);
  EXPECT_EQ(cu_error(no_driver, "launch_kernel", CUDA_ERROR_LAUNCH_FAILED).code, EIO);
  // Names that are not loader fields are kept verbatim.
  EXPECT_EQ(cu_error(no_driver, "cuModuleLoadData", CUDA_ERROR_NO_BINARY_FOR_GPU).message,
            "cuModuleLoadData: CUresult 209");
}

TEST(CuError, UsesTheDriversNamesWhenLoaded) {
  auto api = load_driver_api();
  if (!api) GTEST_SKIP() << api.error().message;
  const Error e = cu_error(**api, "mem_alloc", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(e.message.rfind("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (", 0), 0u) << e.message;
}

TEST(KernelImages, EveryKernelFileIsEmbeddedAsAFatbin) {
  constexpr uint32_t kFatbinMagic = 0xBA55ED50;  // fatbinary container header
  int found = 0;
  for (const KernelImage& image : kernel_images()) {
    SCOPED_TRACE(std::string(image.name));
    ASSERT_GE(image.size, 16u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(image.data) % 8, 0u);
    uint32_t magic = 0;
    std::memcpy(&magic, image.data, sizeof(magic));
    EXPECT_EQ(magic, kFatbinMagic);
    found += image.name == "kv_copy" || image.name == "pattern";
  }
  EXPECT_EQ(found, 2);
}

// The fatbin container (as nvcc writes it): a 16-byte header {magic, version,
// header size, payload size}, then entries {kind (1 PTX, 2 ELF/SASS), version,
// header size, payload size, ..., architecture at byte 28, ...}.
struct FatbinEntry {
  uint16_t kind;
  uint32_t arch;
};

std::vector<FatbinEntry> fatbin_entries(const KernelImage& image) {
  std::vector<FatbinEntry> out;
  uint16_t header_size = 0;
  uint64_t payload = 0;
  std::memcpy(&header_size, image.data + 6, sizeof(header_size));
  std::memcpy(&payload, image.data + 8, sizeof(payload));
  size_t off = header_size;
  const size_t end = std::min<size_t>(image.size, header_size + payload);
  while (off + 32 <= end) {
    FatbinEntry e{};
    uint32_t entry_header = 0;
    uint64_t entry_payload = 0;
    std::memcpy(&e.kind, image.data + off, sizeof(e.kind));
    std::memcpy(&entry_header, image.data + off + 4, sizeof(entry_header));
    std::memcpy(&entry_payload, image.data + off + 8, sizeof(entry_payload));
    std::memcpy(&e.arch, image.data + off + 28, sizeof(e.arch));
    out.push_back(e);
    if (entry_header == 0) break;
    off += entry_header + entry_payload;
  }
  return out;
}

TEST(KernelImages, HoldSassForEveryConfiguredArchAndPtxForTheNewest) {
  std::vector<uint32_t> sass;
  for (const char* p = CXLPOOL_TEST_SASS_ARCHS; *p != '\0';) {
    char* next = nullptr;
    sass.push_back(static_cast<uint32_t>(std::strtoul(p, &next, 10)));
    p = *next == ',' ? next + 1 : next;
  }
  ASSERT_FALSE(sass.empty());
  for (const KernelImage& image : kernel_images()) {
    SCOPED_TRACE(std::string(image.name));
    const auto entries = fatbin_entries(image);
    auto has = [&](uint16_t kind, uint32_t arch) {
      return std::any_of(entries.begin(), entries.end(),
                         [&](const FatbinEntry& e) { return e.kind == kind && e.arch == arch; });
    };
    for (uint32_t arch : sass) EXPECT_TRUE(has(2, arch)) << "no SASS for sm_" << arch;
    EXPECT_TRUE(has(1, CXLPOOL_TEST_PTX_ARCH)) << "no PTX for compute_" << CXLPOOL_TEST_PTX_ARCH;
    EXPECT_EQ(entries.size(), sass.size() + 1);
  }
}

}  // namespace
}  // namespace cxlpool::cuda
