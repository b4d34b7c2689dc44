// SPDX-License-Identifier: Apache-2.0
// The cuda GpuVmm backend through the hal::GpuVmm interface on a real
// device: pages mapped into one reserved range behave as one contiguous
// tensor for kernels, pages move between addresses without copying, host-NUMA
// exports are imported and mapped, registered memfd memory is reached through
// its device pointer, and misuse is refused. Without a GPU the backend must
// fail with the driver's reason.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda_vmm.hpp"
#include "support/gpu_test_env.hpp"
#include "pattern_ref.hpp"

namespace cxlpool::cuda::test {
namespace {

uint64_t expected_checksum(size_t bytes, uint64_t seed) {
  std::vector<std::byte> want(bytes);
  ref::fill_pattern(want, seed);
  return ref::checksum(want);
}

TEST(CudaVmmWithoutGpu, FactoryReportsTheDriversReason) {
  if (gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present";
  auto vmm = make_cuda_vmm(0);
  ASSERT_FALSE(vmm);
  EXPECT_FALSE(vmm.error().message.empty());
  EXPECT_NE(vmm.error().code, 0);
  auto exported = export_host_numa(0, 1 << 20);
  EXPECT_FALSE(exported);
  int x = 0;
  EXPECT_FALSE(HostRegistration::register_range(0, &x, sizeof(x)));
}

class CudaVmmTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto vmm = make_cuda_vmm(0);
    if (!vmm && vmm.error().code == ENOTSUP) GTEST_SKIP() << vmm.error().message;
    ASSERT_TRUE(vmm) << vmm.error().message;
    vmm_ = std::move(*vmm);
    gran_ = vmm_->granularity();
    // The factory leaves the context current on this thread; make sure the
    // kernels' context is too (it is the same primary context).
    CXLPOOL_ASSERT_OK(ctx_->make_current());
  }
  void TearDown() override {
    vmm_.reset();
    GpuTest::TearDown();
  }

  std::unique_ptr<hal::GpuVmm> vmm_;
  size_t gran_ = 0;
};

TEST_F(CudaVmmTest, PagesMappedOnDemandFormOneTensorAndMoveWithoutCopies) {
  EXPECT_STREQ(vmm_->name(), "cuda");
  ASSERT_GT(gran_, 0u);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(va, vmm_->reserve(4 * gran_));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(a, vmm_->create(gran_));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(b, vmm_->create(gran_));
  CXLPOOL_ASSERT_OK(vmm_->map(va, gran_, a, 0));
  CXLPOOL_ASSERT_OK(vmm_->map(va + gran_, gran_, b, 0));
  // Two separate allocations, one contiguous range for the kernel.
  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(va, 2 * gran_, 9));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(sum, kernels_->checksum(va, 2 * gran_));
  EXPECT_EQ(sum, expected_checksum(2 * gran_, 9));
  CXLPOOL_ASSERT_OK(ctx_->synchronize());

  // Deferred reclamation: page b moves to slot 3; its bytes come along.
  CXLPOOL_ASSERT_OK_AND_ASSIGN(second_half, download(va + gran_, gran_));
  CXLPOOL_ASSERT_OK(vmm_->unmap(va + gran_, gran_));
  CXLPOOL_ASSERT_OK(vmm_->map(va + 3 * gran_, gran_, b, 0));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(moved, download(va + 3 * gran_, gran_));
  EXPECT_TRUE(moved == second_half);

  hal::VmmStats st = vmm_->stats();
  EXPECT_EQ(st.reserved_bytes, 4 * gran_);
  EXPECT_EQ(st.mapped_bytes, 2 * gran_);
  EXPECT_EQ(st.maps, 3u);
  EXPECT_EQ(st.unmaps, 1u);
  EXPECT_GT(st.map_ns, 0u);

  // An unmap covering several maps takes them all; releasing handles after
  // that and the range last leaves nothing behind.
  CXLPOOL_ASSERT_OK(vmm_->unmap(va, 4 * gran_));
  EXPECT_EQ(vmm_->stats().mapped_bytes, 0u);
  CXLPOOL_ASSERT_OK(vmm_->release(a));
  CXLPOOL_ASSERT_OK(vmm_->release(b));
  CXLPOOL_ASSERT_OK(vmm_->release_range(va, 4 * gran_));
  EXPECT_EQ(vmm_->stats().reserved_bytes, 0u);
}

TEST_F(CudaVmmTest, MisuseIsRefused) {
  CXLPOOL_ASSERT_OK_AND_ASSIGN(va, vmm_->reserve(2 * gran_));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(h, vmm_->create(2 * gran_));
  EXPECT_EQ(vmm_->reserve(gran_ + 1).error().code, EINVAL);
  EXPECT_EQ(vmm_->create(gran_ / 2).error().code, EINVAL);
  EXPECT_EQ(vmm_->map(va, gran_, h, gran_).error().code, EINVAL);     // offset
  EXPECT_EQ(vmm_->map(va, gran_, h + 12345, 0).error().code, EINVAL);  // handle
  EXPECT_EQ(vmm_->map(va + 2 * gran_, gran_, h, 0).error().code, EINVAL);  // outside
  CXLPOOL_ASSERT_OK(vmm_->map(va, 2 * gran_, h, 0));
  EXPECT_EQ(vmm_->map(va + gran_, gran_, h, 0).error().code, EEXIST);
  EXPECT_EQ(vmm_->unmap(va, gran_).error().code, EINVAL);  // half a mapping
  EXPECT_EQ(vmm_->import_fd(-1, gran_).error().code, EBADF);
  CXLPOOL_ASSERT_OK(vmm_->release(h));  // still mapped: memory stays until unmap
  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(va, 2 * gran_, 1));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(sum, kernels_->checksum(va, 2 * gran_));
  EXPECT_EQ(sum, expected_checksum(2 * gran_, 1));
  CXLPOOL_ASSERT_OK(vmm_->release_range(va, 2 * gran_));  // unmaps first
}

TEST_F(CudaVmmTest, HostNumaExportIsImportedAndMapped) {
  auto exported = export_host_numa(0, gran_);
  if (!exported && exported.error().code == ENOTSUP) GTEST_SKIP() << exported.error().message;
  ASSERT_TRUE(exported) << exported.error().message;
  ASSERT_GE(exported->bytes, gran_);
  ASSERT_EQ(exported->bytes % gran_, 0u);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(va, vmm_->reserve(exported->bytes));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(h, vmm_->import_fd(exported->fd.get(), exported->bytes));
  // The fd stays the caller's: closing it keeps the import alive.
  exported->fd.reset();
  CXLPOOL_ASSERT_OK(vmm_->map(va, exported->bytes, h, 0));
  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(va, exported->bytes, 12));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(va, exported->bytes));
  std::vector<std::byte> want(exported->bytes);
  ref::fill_pattern(want, 12);
  EXPECT_TRUE(got == want);
}

TEST_F(CudaVmmTest, RegisteredMemfdRangeIsReachedThroughItsDevicePointer) {
  const size_t size = size_t{4} << 20;
  UniqueFd fd(::memfd_create("cxlpool-cuda-vmm-test", MFD_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(::ftruncate(fd.get(), size), 0);
  void* host = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(host, MAP_FAILED);
  {
    auto reg = HostRegistration::register_range(0, host, size);
    if (!reg && reg.error().code == ENOTSUP) {
      ::munmap(host, size);
      GTEST_SKIP() << reg.error().message;
    }
    ASSERT_TRUE(reg) << reg.error().message;
    EXPECT_EQ(reg->size(), size);
    CXLPOOL_ASSERT_OK(ctx_->make_current());
    CXLPOOL_ASSERT_OK(kernels_->fill_pattern(reg->device_ptr(), size, 77));
    CXLPOOL_ASSERT_OK(ctx_->synchronize());
    std::vector<std::byte> want(size);
    ref::fill_pattern(want, 77);
    EXPECT_EQ(std::memcmp(host, want.data(), size), 0);
  }
  ::munmap(host, size);
}

}  // namespace
}  // namespace cxlpool::cuda::test
