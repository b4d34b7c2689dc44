// SPDX-License-Identifier: Apache-2.0
#include "device_context.hpp"

#include <string>
#include <utility>

#include "driver_api.hpp"

namespace cxlpool::cuda {

Result<DeviceContext> DeviceContext::open(int ordinal) {
  auto loaded = init_driver_api();
  if (!loaded) return tl::unexpected(loaded.error());
  const DriverApi& api = **loaded;
  int count = 0;
  CXLPOOL_CU_TRY(api, device_get_count, &count);
  if (ordinal < 0 || ordinal >= count) {
    return fail(EINVAL, "CUDA device " + std::to_string(ordinal) + " does not exist (" +
                            std::to_string(count) + " device(s))");
  }
  CUdevice dev = 0;
  CXLPOOL_CU_TRY(api, device_get, &dev, ordinal);
  CUcontext ctx = nullptr;
  CXLPOOL_CU_TRY(api, device_primary_ctx_retain, &ctx, dev);
  DeviceContext result(&api, dev, ctx);
  if (auto r = result.make_current(); !r) return tl::unexpected(r.error());
  return result;
}

DeviceContext::DeviceContext(DeviceContext&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      device_(std::exchange(other.device_, -1)),
      context_(std::exchange(other.context_, nullptr)) {}

DeviceContext& DeviceContext::operator=(DeviceContext&& other) noexcept {
  if (this != &other) {
    release();
    api_ = std::exchange(other.api_, nullptr);
    device_ = std::exchange(other.device_, -1);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

DeviceContext::~DeviceContext() { release(); }

void DeviceContext::release() {
  if (context_ != nullptr) api_->device_primary_ctx_release(device_);
  context_ = nullptr;
}

Result<void> DeviceContext::make_current() const {
  CXLPOOL_CU_TRY(*api_, ctx_set_current, static_cast<CUcontext>(context_));
  return {};
}

Result<void> DeviceContext::synchronize() const {
  CXLPOOL_CU_TRY(*api_, ctx_synchronize);
  return {};
}

Result<uint64_t> DeviceContext::alloc(size_t bytes) const {
  CUdeviceptr ptr = 0;
  CXLPOOL_CU_TRY(*api_, mem_alloc, &ptr, bytes);
  return static_cast<uint64_t>(ptr);
}

Result<void> DeviceContext::free(uint64_t device_ptr) const {
  CXLPOOL_CU_TRY(*api_, mem_free, static_cast<CUdeviceptr>(device_ptr));
  return {};
}

Result<void> DeviceContext::copy_to_device(uint64_t dst, const void* src, size_t bytes) const {
  CXLPOOL_CU_TRY(*api_, memcpy_htod, static_cast<CUdeviceptr>(dst), src, bytes);
  return {};
}

Result<void> DeviceContext::copy_on_device(uint64_t dst, uint64_t src, size_t bytes) const {
  CXLPOOL_CU_TRY(*api_, memcpy_dtod_async, static_cast<CUdeviceptr>(dst),
                 static_cast<CUdeviceptr>(src), bytes, nullptr);
  return {};
}

Result<void> DeviceContext::copy_to_host(void* dst, uint64_t src, size_t bytes) const {
  CXLPOOL_CU_TRY(*api_, memcpy_dtoh, dst, static_cast<CUdeviceptr>(src), bytes);
  return {};
}

Result<DeviceBuffer> DeviceBuffer::allocate(const DeviceContext& ctx, size_t bytes) {
  auto ptr = ctx.alloc(bytes);
  if (!ptr) return tl::unexpected(ptr.error());
  return DeviceBuffer(&ctx.api(), *ptr, bytes);
}

void free_device_memory(const DriverApi& api, uint64_t ptr) {
  api.mem_free(static_cast<CUdeviceptr>(ptr));
}

}  // namespace cxlpool::cuda
