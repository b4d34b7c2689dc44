// SPDX-License-Identifier: Apache-2.0
// GpuCopyEngine: moving bytes between host memory and one GPU — device
// buffers, pinned host staging, host ranges registered for in-place DMA, and
// one ordered queue of asynchronous copies both ways. What a weight
// streamer's device window and a device KV arena's offload and restore
// need, without naming a GPU vendor. GpuVmm
// backends with devices of their own provide one (cuda); the host backend
// has none. Open one with hal::open_gpu_copy_engine (backend_registry.hpp).
// Device addresses are uint64_t (CUdeviceptr values for cuda).
// Nothing here is thread-safe: callers serialize per engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::hal {

// Device memory, freed on destruction. Must not outlive its engine.
class GpuDeviceBuffer {
 public:
  virtual ~GpuDeviceBuffer() = default;
  virtual std::uint64_t address() const = 0;
  virtual std::size_t size() const = 0;
};

// Page-locked host memory, page aligned, freed on destruction: copies from
// it run asynchronously and O_DIRECT reads may land in it. Must not outlive
// its engine.
class GpuPinnedBuffer {
 public:
  virtual ~GpuPinnedBuffer() = default;
  virtual std::byte* data() const = 0;
  virtual std::size_t size() const = 0;
};

// How copies from a host range reach the device.
enum class HostCopyPath : std::uint8_t {
  kDirect,  // the driver registered the range: the DMA engine reads it in place
  kStaged,  // it did not: the caller copies through pinned staging first
};

// The outcome of GpuCopyEngine::register_host_range. A refusal is not an
// error: staging still works, only slower, so the caller reports `reason`.
struct HostRangeRegistration {
  HostCopyPath path = HostCopyPath::kStaged;
  std::string reason;  // kStaged: the driver's reason; empty for kDirect
};

class GpuCopyEngine {
 public:
  virtual ~GpuCopyEngine() = default;
  virtual const char* name() const = 0;  // the backend: "cuda"
  virtual int device() const = 0;

  // The device is usable on the thread that opened the engine; any other
  // thread calls this before its first call into the engine.
  virtual Result<void> bind_thread() = 0;

  // ENOMEM when device (or pinned host) memory is exhausted; the driver's
  // error otherwise.
  virtual Result<std::unique_ptr<GpuDeviceBuffer>> allocate_device(std::size_t bytes) = 0;
  virtual Result<std::unique_ptr<GpuPinnedBuffer>> allocate_pinned(std::size_t bytes) = 0;

  // Registers [host, host+bytes) with the driver so that copies read it in
  // place; a range mapped read-only (a client's view of a shared region) is
  // registered read-only. kStaged with the driver's reason when it refuses
  // (or the range is not mapped readable). The registration lasts as long
  // as the engine; the range must stay mapped that long.
  virtual HostRangeRegistration register_host_range(const std::byte* host, std::size_t bytes) = 0;

  // Queues a copy of [src, src+bytes) to device address `dst`. Copies run
  // in the order queued; pinned and registered sources are copied
  // asynchronously (they must stay valid until synchronize() returns),
  // other memory synchronously by the driver.
  virtual Result<void> copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes) = 0;

  // Queues a copy of device bytes [src, src+bytes) to host memory `dst`, in
  // the same order as copy_to_device. Pinned and registered destinations
  // are written asynchronously (read them after synchronize()), other
  // memory synchronously by the driver.
  virtual Result<void> copy_to_host(void* dst, std::uint64_t src, std::size_t bytes) = 0;

  // Waits for every copy queued so far.
  virtual Result<void> synchronize() = 0;
};

}  // namespace cxlpool::hal
