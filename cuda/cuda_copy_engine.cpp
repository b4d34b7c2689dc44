// SPDX-License-Identifier: Apache-2.0
#include "cuda_copy_engine.hpp"

#include <string>
#include <utility>
#include <vector>

#include "cuda_vmm.hpp"
#include "device_context.hpp"
#include "host_copy.hpp"

namespace cxlpool::cuda {
namespace {

class CudaDeviceBuffer final : public hal::GpuDeviceBuffer {
 public:
  explicit CudaDeviceBuffer(DeviceBuffer buffer) : buffer_(std::move(buffer)) {}
  uint64_t address() const override { return buffer_.ptr(); }
  size_t size() const override { return buffer_.size(); }

 private:
  DeviceBuffer buffer_;
};

class CudaPinnedBuffer final : public hal::GpuPinnedBuffer {
 public:
  explicit CudaPinnedBuffer(PinnedHostBuffer buffer) : buffer_(std::move(buffer)) {}
  std::byte* data() const override { return buffer_.data(); }
  size_t size() const override { return buffer_.size(); }

 private:
  PinnedHostBuffer buffer_;
};

class CudaCopyEngine final : public hal::GpuCopyEngine {
 public:
  CudaCopyEngine(int ordinal, DeviceContext ctx, CopyStream stream)
      : ordinal_(ordinal), ctx_(std::move(ctx)), stream_(std::move(stream)) {}

  // Copies still queued read registered ranges: they finish before the
  // registrations go (and the stream before the context).
  ~CudaCopyEngine() override { (void)stream_.synchronize(); }

  const char* name() const override { return "cuda"; }
  int device() const override { return ordinal_; }
  Result<void> bind_thread() override { return ctx_.make_current(); }

  Result<std::unique_ptr<hal::GpuDeviceBuffer>> allocate_device(size_t bytes) override {
    auto buffer = DeviceBuffer::allocate(ctx_, bytes);
    if (!buffer) return tl::unexpected(buffer.error());
    return std::make_unique<CudaDeviceBuffer>(std::move(*buffer));
  }

  Result<std::unique_ptr<hal::GpuPinnedBuffer>> allocate_pinned(size_t bytes) override {
    auto buffer = PinnedHostBuffer::allocate(ctx_, bytes);
    if (!buffer) return tl::unexpected(buffer.error());
    return std::make_unique<CudaPinnedBuffer>(std::move(*buffer));
  }

  hal::HostRangeRegistration register_host_range(const std::byte* host, size_t bytes) override {
    // The engine only copies from the range (the driver's call takes a
    // mutable pointer); kDetect registers a read-only mapping read-only,
    // which the driver refuses otherwise.
    auto reg = HostRegistration::register_range(ordinal_, const_cast<std::byte*>(host), bytes,
                                                HostAccess::kDetect);
    if (!reg) return {hal::HostCopyPath::kStaged, reg.error().message};
    registrations_.push_back(std::move(*reg));
    return {hal::HostCopyPath::kDirect, {}};
  }

  Result<void> copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    return stream_.to_device(dst, src, bytes);
  }

  Result<void> copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    return stream_.to_host(dst, src, bytes);
  }

  Result<void> synchronize() override { return stream_.synchronize(); }

 private:
  int ordinal_;  // the CUDA device ordinal (DeviceContext holds the CUdevice)
  DeviceContext ctx_;
  CopyStream stream_;
  std::vector<HostRegistration> registrations_;
};

}  // namespace

Result<std::unique_ptr<hal::GpuCopyEngine>> open_cuda_copy_engine(int device) {
  auto ctx = DeviceContext::open(device);
  if (!ctx) return tl::unexpected(ctx.error());
  auto stream = CopyStream::create(*ctx);
  if (!stream) return fail(stream.error().code, "copy stream: " + stream.error().message);
  return std::make_unique<CudaCopyEngine>(device, std::move(*ctx), std::move(*stream));
}

}  // namespace cxlpool::cuda
