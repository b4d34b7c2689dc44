// SPDX-License-Identifier: Apache-2.0
// Pinned host memory and an ordered stream of asynchronous host<->device
// copies, for code outside cuda/ (no cuda.h here): staging buffers, I/O
// engines, streamers. Both need the device's context current on the calling
// thread (DeviceContext::make_current).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "device_context.hpp"

namespace cxlpool::cuda {

// cuMemFreeHost.
void free_pinned_host_memory(const DriverApi& api, void* ptr);

// cuMemHostAlloc'ed (page-locked, portable) memory, page aligned, freed on
// destruction. Must not outlive the context it was allocated in.
class PinnedHostBuffer : public DriverAllocation<void*, &free_pinned_host_memory> {
 public:
  static Result<PinnedHostBuffer> allocate(const DeviceContext& ctx, size_t bytes);

  std::byte* data() const { return static_cast<std::byte*>(pointer()); }

 private:
  PinnedHostBuffer(const DriverApi* api, void* ptr, size_t size)
      : DriverAllocation(api, ptr, size) {}
};

// A non-blocking CUDA stream: copies run in the order they were enqueued;
// mark() returns a ticket that is reached once everything enqueued before it
// has finished.
class CopyStream {
 public:
  using Ticket = uint32_t;

  static Result<CopyStream> create(const DeviceContext& ctx);

  CopyStream(const CopyStream&) = delete;
  CopyStream& operator=(const CopyStream&) = delete;
  CopyStream(CopyStream&& other) noexcept;
  CopyStream& operator=(CopyStream&& other) noexcept;
  ~CopyStream();

  // Asynchronous when the host side is pinned; pageable memory makes the
  // driver copy synchronously through its own staging.
  Result<void> to_device(uint64_t dst, const void* src, size_t bytes);
  Result<void> to_host(void* dst, uint64_t src, size_t bytes);

  Result<Ticket> mark();
  // True once the ticket is reached; the ticket is then spent.
  Result<bool> reached(Ticket ticket);
  // Blocks until the ticket is reached; the ticket is then spent.
  Result<void> wait(Ticket ticket);
  Result<void> synchronize();

  void* stream() const { return stream_; }  // CUstream, for kernel launches

 private:
  CopyStream(const DriverApi* api, void* stream) : api_(api), stream_(stream) {}
  void reset();

  const DriverApi* api_ = nullptr;
  void* stream_ = nullptr;           // CUstream
  std::vector<void*> events_;        // CUevent per ticket
  std::vector<Ticket> free_tickets_;
};

}  // namespace cxlpool::cuda
