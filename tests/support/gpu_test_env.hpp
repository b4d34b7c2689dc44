// SPDX-License-Identifier: Apache-2.0
// Fixture for tests that need a GPU: skips with the driver's own reason when
// libcuda.so.1 is missing, cuInit fails or there is no device (fails instead
// when CXLPOOL_REQUIRE_GPU is set), and fails when a device is there but
// cannot be used.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device_context.hpp"
#include "driver_api.hpp"
#include "kernels.hpp"

// `var` = the value of a Result-returning `expr`, or a fatal test failure
// that shows the error.
#define CXLPOOL_ASSERT_OK_AND_ASSIGN(var, expr)                          \
  auto var##_result = (expr);                                            \
  ASSERT_TRUE(var##_result.has_value()) << var##_result.error().message; \
  auto& var = *var##_result

#define CXLPOOL_ASSERT_OK(expr)                                                  \
  do {                                                                           \
    const auto cxlpool_result_ = (expr);                                         \
    ASSERT_TRUE(cxlpool_result_.has_value()) << cxlpool_result_.error().message; \
  } while (0)

namespace cxlpool::cuda::test {

// Empty when GPU tests can run here.
inline std::string gpu_unavailable_reason() {
  auto api = init_driver_api();
  if (!api) return api.error().message;
  int count = 0;
  if (const CUresult r = (*api)->device_get_count(&count); r != CUDA_SUCCESS) {
    return cu_error(**api, "cuDeviceGetCount", r).message;
  }
  return count > 0 ? std::string() : std::string("no CUDA devices");
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
      // tests/gpu/run.sh sets this on GPU hosts, where a skip would hide a
      // broken driver set-up.
      if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << why;
      GTEST_SKIP() << why;
    }
    auto ctx = DeviceContext::open(0);
    ASSERT_TRUE(ctx) << ctx.error().message;
    ctx_.emplace(std::move(*ctx));
    auto kernels = Kernels::load(*ctx_);
    ASSERT_TRUE(kernels) << kernels.error().message;
    kernels_.emplace(std::move(*kernels));
  }

  void TearDown() override {
    kernels_.reset();
    ctx_.reset();
  }

  const DriverApi& api() const { return ctx_->api(); }
  CUdevice device() const { return ctx_->device(); }

  Result<DeviceBuffer> upload(std::span<const std::byte> bytes) const {
    auto buf = DeviceBuffer::allocate(*ctx_, std::max<size_t>(bytes.size(), 1));
    if (!buf) return buf;
    if (!bytes.empty()) {
      if (auto r = ctx_->copy_to_device(buf->ptr(), bytes.data(), bytes.size()); !r) {
        return tl::unexpected(r.error());
      }
    }
    return buf;
  }

  Result<std::vector<std::byte>> download(uint64_t ptr, size_t bytes) const {
    std::vector<std::byte> out(bytes);
    if (bytes > 0) {
      if (auto r = ctx_->copy_to_host(out.data(), ptr, bytes); !r) return tl::unexpected(r.error());
    }
    return out;
  }

  // A device uint32_t holding 0, for the kernels' skipped-page counters.
  Result<DeviceBuffer> upload_counter() const {
    const uint32_t zero = 0;
    return upload(std::as_bytes(std::span<const uint32_t>(&zero, 1)));
  }

  // The device uint32_t at `ptr`.
  Result<uint32_t> download_counter(uint64_t ptr) const {
    auto bytes = download(ptr, sizeof(uint32_t));
    if (!bytes) return tl::unexpected(bytes.error());
    uint32_t value = 0;
    std::memcpy(&value, bytes->data(), sizeof(value));
    return value;
  }

  std::optional<DeviceContext> ctx_;
  std::optional<Kernels> kernels_;
};

}  // namespace cxlpool::cuda::test
