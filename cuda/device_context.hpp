// SPDX-License-Identifier: Apache-2.0
// A CUDA device's primary context plus plain device-memory helpers, for code
// outside cuda/ (no cuda.h here). Device pointers are CUdeviceptr values
// carried as uint64_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "cxlpool/common/result.hpp"

namespace cxlpool::cuda {

struct DriverApi;

class DeviceContext {
 public:
  // Loads the driver, calls cuInit, retains device `ordinal`'s primary
  // context and makes it current on the calling thread. Errors: as
  // load_driver_api()/init_driver_api(); EINVAL for a bad ordinal.
  static Result<DeviceContext> open(int ordinal = 0);

  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  DeviceContext(DeviceContext&& other) noexcept;
  DeviceContext& operator=(DeviceContext&& other) noexcept;
  ~DeviceContext();  // releases the primary context

  // The context is current only on the thread that opened it; other threads
  // call this before using the device.
  Result<void> make_current() const;
  Result<void> synchronize() const;

  Result<uint64_t> alloc(size_t bytes) const;
  Result<void> free(uint64_t device_ptr) const;
  Result<void> copy_to_device(uint64_t dst, const void* src, size_t bytes) const;
  Result<void> copy_to_host(void* dst, uint64_t src, size_t bytes) const;
  // Device to device on the legacy default stream, asynchronous (ordered
  // with kernels launched there; synchronize() waits for it).
  Result<void> copy_on_device(uint64_t dst, uint64_t src, size_t bytes) const;

  const DriverApi& api() const { return *api_; }
  int device() const { return device_; }

 private:
  DeviceContext(const DriverApi* api, int device, void* context)
      : api_(api), device_(device), context_(context) {}
  void release();

  const DriverApi* api_ = nullptr;
  int device_ = -1;
  void* context_ = nullptr;  // CUcontext
};

// Move-only owner of `size` bytes the driver allocated at `ptr`, handed back
// with `Free` on destruction. A moved-from or empty one holds Pointer{}.
template <typename Pointer, void (*Free)(const DriverApi&, Pointer)>
class DriverAllocation {
 public:
  DriverAllocation(const DriverAllocation&) = delete;
  DriverAllocation& operator=(const DriverAllocation&) = delete;
  DriverAllocation(DriverAllocation&& other) noexcept
      : api_(std::exchange(other.api_, nullptr)),
        ptr_(std::exchange(other.ptr_, Pointer{})),
        size_(std::exchange(other.size_, 0)) {}
  DriverAllocation& operator=(DriverAllocation&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = std::exchange(other.api_, nullptr);
      ptr_ = std::exchange(other.ptr_, Pointer{});
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~DriverAllocation() { reset(); }

  size_t size() const { return size_; }

 protected:
  DriverAllocation(const DriverApi* api, Pointer ptr, size_t size)
      : api_(api), ptr_(ptr), size_(size) {}

  Pointer pointer() const { return ptr_; }

 private:
  // A destructor has nobody to report a failed free to; the context's
  // teardown reclaims the memory anyway.
  void reset() {
    if (ptr_ != Pointer{}) Free(*api_, ptr_);
    ptr_ = Pointer{};
    size_ = 0;
  }

  const DriverApi* api_ = nullptr;
  Pointer ptr_ = Pointer{};
  size_t size_ = 0;
};

// cuMemFree.
void free_device_memory(const DriverApi& api, uint64_t ptr);

// cuMemAlloc'ed memory freed on destruction. Must not outlive the context it
// was allocated in (moving that DeviceContext object is fine).
class DeviceBuffer : public DriverAllocation<uint64_t, &free_device_memory> {
 public:
  static Result<DeviceBuffer> allocate(const DeviceContext& ctx, size_t bytes);

  uint64_t ptr() const { return pointer(); }

 private:
  DeviceBuffer(const DriverApi* api, uint64_t ptr, size_t size)
      : DriverAllocation(api, ptr, size) {}
};

}  // namespace cxlpool::cuda
