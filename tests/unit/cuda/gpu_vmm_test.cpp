// SPDX-License-Identifier: Apache-2.0
// The driver calls the cuda GpuVmm backend is built on, end to end on a real
// device: reserve a virtual range, create physical memory, map it, grant
// access, move data through it with the kernels, export it as a POSIX fd and
// map the import a second time; host-NUMA allocations; registered memfd
// memory. Each step is checked against the CPU references.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "support/gpu_test_env.hpp"
#include "pattern_ref.hpp"

namespace cxlpool::cuda::test {
namespace {

// Runs the undo steps of a test in reverse order even when it stops early.
// Steps capture by value: they run after the test's later locals are gone.
class Cleanup {
 public:
  Cleanup() = default;
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  ~Cleanup() {
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)();
  }
  void add(std::function<void()> step) { steps_.push_back(std::move(step)); }

 private:
  std::vector<std::function<void()>> steps_;
};

#define CXLPOOL_ASSERT_CU(call)                                                          \
  do {                                                                                   \
    const CUresult cxlpool_cu_ = (call);                                                 \
    ASSERT_EQ(cxlpool_cu_, CUDA_SUCCESS) << cu_error(api(), #call, cxlpool_cu_).message; \
  } while (0)

uint64_t expected_checksum(size_t bytes, uint64_t seed) {
  std::vector<std::byte> want(bytes);
  ref::fill_pattern(want, seed);
  return ref::checksum(want);
}

class GpuVmm : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    int vmm = 0;
    CXLPOOL_ASSERT_CU(api().device_get_attribute(
        &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device()));
    if (vmm == 0) GTEST_SKIP() << "device 0 does not support the VMM API";
  }

  bool attribute(CUdevice_attribute attr) {
    int value = 0;
    return api().device_get_attribute(&value, attr, device()) == CUDA_SUCCESS && value != 0;
  }

  CUmemAccessDesc device_access() const {
    CUmemAccessDesc access = {};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device();
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
  }

  // Pinned memory at `type` `id` that can be exported as a POSIX fd, and the
  // minimum granularity of its allocations.
  void exportable(CUmemLocationType type, int id, CUmemAllocationProp& prop, size_t& gran) {
    prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = id;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CXLPOOL_ASSERT_CU(
        api().mem_get_allocation_granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }

  // A reserved range of `bytes` aligned to `align`, freed by `cleanup`.
  void reserve(Cleanup& cleanup, size_t bytes, size_t align, CUdeviceptr& va) {
    CXLPOOL_ASSERT_CU(api().mem_address_reserve(&va, bytes, align, 0, 0));
    cleanup.add([=, this] { api().mem_address_free(va, bytes); });
  }

  // New physical memory of `bytes`, released by `cleanup`.
  void create(Cleanup& cleanup, const CUmemAllocationProp& prop, size_t bytes,
              CUmemGenericAllocationHandle& handle) {
    CXLPOOL_ASSERT_CU(api().mem_create(&handle, bytes, &prop, 0));
    cleanup.add([=, this] { api().mem_release(handle); });
  }

  // `handle` mapped at [va, va + bytes), read-write for the device; unmapped
  // by `cleanup`.
  void map_for_device(Cleanup& cleanup, CUdeviceptr va, size_t bytes,
                      CUmemGenericAllocationHandle handle) {
    CXLPOOL_ASSERT_CU(api().mem_map(va, bytes, 0, handle, 0));
    cleanup.add([=, this] { api().mem_unmap(va, bytes); });
    const CUmemAccessDesc access = device_access();
    CXLPOOL_ASSERT_CU(api().mem_set_access(va, bytes, &access, 1));
  }
};

TEST_F(GpuVmm, ReserveCreateMapExportImportRoundTrip) {
  CUmemAllocationProp prop;
  size_t gran = 0;
  ASSERT_NO_FATAL_FAILURE(exportable(CU_MEM_LOCATION_TYPE_DEVICE, device(), prop, gran));
  ASSERT_GT(gran, 0u);
  Cleanup cleanup;

  CUdeviceptr va = 0;
  ASSERT_NO_FATAL_FAILURE(reserve(cleanup, 2 * gran, gran, va));
  ASSERT_EQ(va % gran, 0u);

  CUmemGenericAllocationHandle handle = 0;
  ASSERT_NO_FATAL_FAILURE(create(cleanup, prop, gran, handle));
  ASSERT_NO_FATAL_FAILURE(map_for_device(cleanup, va, gran, handle));

  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(va, gran, 1));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(first, kernels_->checksum(va, gran));
  EXPECT_EQ(first, expected_checksum(gran, 1));

  // The daemon hands chunks to clients as fds: export, import, and map the
  // import at the second half of the range. Both halves are one allocation.
  int fd = -1;
  CXLPOOL_ASSERT_CU(api().mem_export_to_shareable_handle(
      &fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  cleanup.add([fd] { ::close(fd); });
  CUmemGenericAllocationHandle imported = 0;
  CXLPOOL_ASSERT_CU(api().mem_import_from_shareable_handle(
      &imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  cleanup.add([=, this] { api().mem_release(imported); });
  ASSERT_NO_FATAL_FAILURE(map_for_device(cleanup, va + gran, gran, imported));

  CXLPOOL_ASSERT_OK_AND_ASSIGN(through_import, kernels_->checksum(va + gran, gran));
  EXPECT_EQ(through_import, first);
  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(va + gran, gran, 2));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(through_original, kernels_->checksum(va, gran));
  EXPECT_EQ(through_original, expected_checksum(gran, 2));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(host_copy, download(va, gran));
  EXPECT_EQ(ref::checksum(host_copy), through_original);
}

TEST_F(GpuVmm, HostNumaAllocationIsDeviceAccessible) {
  if (!attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)) {
    GTEST_SKIP() << "device 0 does not support HOST_NUMA VMM allocations";
  }
  CUmemAllocationProp prop;
  size_t gran = 0;
  ASSERT_NO_FATAL_FAILURE(exportable(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, prop, gran));
  Cleanup cleanup;
  CUdeviceptr va = 0;
  ASSERT_NO_FATAL_FAILURE(reserve(cleanup, gran, gran, va));
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_NO_FATAL_FAILURE(create(cleanup, prop, gran, handle));
  ASSERT_NO_FATAL_FAILURE(map_for_device(cleanup, va, gran, handle));

  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(va, gran, 3));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(va, gran));
  std::vector<std::byte> want(gran);
  ref::fill_pattern(want, 3);
  EXPECT_TRUE(got == want);
}

TEST_F(GpuVmm, RegisteredMemfdChunkIsReadAndWrittenByKernels) {
  if (!attribute(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)) {
    GTEST_SKIP() << "device 0 cannot use host pointers of registered memory";
  }
  // A daemon-owned chunk as clients see it: a MAP_SHARED memfd mapping.
  const size_t size = size_t{2} << 20;
  const int fd = ::memfd_create("cxlpool-gpu-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  Cleanup cleanup;
  cleanup.add([fd] { ::close(fd); });
  ASSERT_EQ(::ftruncate(fd, size), 0);
  void* host = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(host, MAP_FAILED);
  cleanup.add([host, size] { ::munmap(host, size); });
  std::span<std::byte> bytes(static_cast<std::byte*>(host), size);
  ref::fill_pattern(bytes, 4);

  CXLPOOL_ASSERT_CU(api().mem_host_register(host, size, CU_MEMHOSTREGISTER_DEVICEMAP));
  cleanup.add([=, this] { api().mem_host_unregister(host); });
  const auto dev_ptr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(host));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(sum, kernels_->checksum(dev_ptr, size));
  EXPECT_EQ(sum, ref::checksum(bytes));

  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(dev_ptr, size, 5));
  CXLPOOL_ASSERT_OK(ctx_->synchronize());
  std::vector<std::byte> via_fd(size);
  ASSERT_EQ(::pread(fd, via_fd.data(), size, 0), static_cast<ssize_t>(size));
  std::vector<std::byte> want(size);
  ref::fill_pattern(want, 5);
  EXPECT_TRUE(via_fd == want);
}

}  // namespace
}  // namespace cxlpool::cuda::test
