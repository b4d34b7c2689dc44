// SPDX-License-Identifier: Apache-2.0
// The device side of a CXLPOOL_STREAM_CUDA streamer: device-memory slots,
// each mirrored by a pinned host staging slot of the same layout. Layers
// read from files land in the staging slot (O_DIRECT into pinned memory)
// and go up with one H2D copy; region bytes go up straight from the shared
// region when the driver lets us register it, else through the staging
// slot. Copies of a slot are ordered on one stream; finish() waits for them.
// The copy thread calls bind_thread() before anything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::client {

class DeviceWindow {
 public:
  virtual ~DeviceWindow() = default;

  virtual Result<void> bind_thread() = 0;
  virtual size_t slots() const = 0;
  // Pinned host memory of slot i (slot_bytes, page aligned).
  virtual std::byte* staging(size_t slot) const = 0;
  // The slot's device memory (a CUdeviceptr value).
  virtual uint64_t device(size_t slot) const = 0;
  // True when region bytes are copied to the device without staging.
  virtual bool region_registered() const = 0;
  // Why the region is not registered (the driver's reason); empty when it
  // is, or when there is no region.
  virtual const std::string& registration_error() const = 0;

  // Queues region bytes [src, src+bytes) for device(slot) + dst.
  virtual Result<void> copy_region(size_t slot, uint64_t dst, const std::byte* src, uint64_t bytes) = 0;
  // Queues staging(slot) + [dst, dst+bytes) for device(slot) + dst.
  virtual Result<void> upload_staged(size_t slot, uint64_t dst, uint64_t bytes) = 0;
  // Waits for every copy queued so far.
  virtual Result<void> finish() = 0;
};

// `slots` device slots of `slot_bytes`, the first `staged` of them with a
// staging slot (`staged` >= 1; slots past it borrow staging slot 0 and must
// be filled while nothing else uses it). `region`: the model's shared
// region, registered with the driver when it allows (read-only with
// CU_MEMHOSTREGISTER_READ_ONLY when it is mapped read-only); when it does
// not, registration_error() says why and region bytes are staged. The
// device side is the cuda backend's hal::GpuCopyEngine. ENODEV: no usable
// CUDA device (or a libcxlpool without the cuda backend), the message says
// why; ENOMEM: device or pinned memory exhausted.
Result<std::unique_ptr<DeviceWindow>> open_cuda_window(int device, size_t slots, size_t staged, uint64_t slot_bytes,
                                                       std::span<const std::byte> region);

}  // namespace cxlpool::client
