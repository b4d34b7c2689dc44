// SPDX-License-Identifier: Apache-2.0
// DeviceWindow over cuda/'s DeviceContext, DeviceBuffer, PinnedHostBuffer,
// CopyStream and HostRegistration (no cuda.h here: cuda/ loads the driver).
#include <optional>
#include <string>
#include <vector>

#include "device_window.hpp"
#include "window_copy.hpp"

#if CXLPOOL_WEIGHTS_CUDA
#include "cuda_vmm.hpp"
#include "device_context.hpp"
#include "host_copy.hpp"
#endif

namespace cxlpool::client {

#if CXLPOOL_WEIGHTS_CUDA
namespace {

class CudaWindow final : public DeviceWindow {
 public:
  CudaWindow(cuda::DeviceContext ctx, int device) : ctx_(std::move(ctx)), device_(device) {}

  Result<void> init(size_t slots, size_t staged, uint64_t slot_bytes, std::span<const std::byte> region) {
    for (size_t i = 0; i < slots; ++i) {
      auto buf = cuda::DeviceBuffer::allocate(ctx_, slot_bytes);
      if (!buf) return fail(buf.error().code, "streamer: device slot: " + buf.error().message);
      device_slots_.push_back(std::move(*buf));
    }
    for (size_t i = 0; i < staged; ++i) {
      auto buf = cuda::PinnedHostBuffer::allocate(ctx_, slot_bytes);
      if (!buf) return fail(buf.error().code, "streamer: pinned staging slot: " + buf.error().message);
      staging_.push_back(std::move(*buf));
    }
    auto stream = cuda::CopyStream::create(ctx_);
    if (!stream) return fail(stream.error().code, "streamer: copy stream: " + stream.error().message);
    stream_.emplace(std::move(*stream));
    if (!region.empty()) {
      // Clients map the region read-only: register_range reads the mapping's
      // protection and asks for a read-only registration then. A driver that
      // still refuses costs one staging copy per region layer, nothing else;
      // the streamer reports why.
      auto reg = cuda::HostRegistration::register_range(device_, const_cast<std::byte*>(region.data()),
                                                        region.size(), cuda::HostAccess::kDetect);
      if (reg) {
        registration_.emplace(std::move(*reg));
      } else {
        registration_error_ = reg.error().message;
      }
    }
    return {};
  }

  ~CudaWindow() override {
    if (stream_) (void)stream_->synchronize();
  }

  Result<void> bind_thread() override { return ctx_.make_current(); }
  size_t slots() const override { return device_slots_.size(); }
  std::byte* staging(size_t slot) const override {
    return staging_[slot < staging_.size() ? slot : 0].data();
  }
  uint64_t device(size_t slot) const override { return device_slots_[slot].ptr(); }
  bool region_registered() const override { return registration_.has_value(); }
  const std::string& registration_error() const override { return registration_error_; }

  Result<void> copy_region(size_t slot, uint64_t dst, const std::byte* src, uint64_t bytes) override {
    if (registration_) {
      // Registered pages are pinned: the DMA engine reads the region itself.
      return stream_->to_device(device(slot) + dst, src, bytes);
    }
    copy_to_window(staging(slot) + dst, src, bytes);
    return upload_staged(slot, dst, bytes);
  }

  Result<void> upload_staged(size_t slot, uint64_t dst, uint64_t bytes) override {
    return stream_->to_device(device(slot) + dst, staging(slot) + dst, bytes);
  }

  Result<void> finish() override { return stream_->synchronize(); }

 private:
  cuda::DeviceContext ctx_;
  int device_;
  std::vector<cuda::DeviceBuffer> device_slots_;
  std::vector<cuda::PinnedHostBuffer> staging_;
  std::optional<cuda::CopyStream> stream_;
  std::optional<cuda::HostRegistration> registration_;
  std::string registration_error_;
};

}  // namespace

Result<std::unique_ptr<DeviceWindow>> open_cuda_window(int device, size_t slots, size_t staged, uint64_t slot_bytes,
                                                       std::span<const std::byte> region) {
  if (staged == 0 || staged > slots) return fail(EINVAL, "streamer: bad staging slot count");
  auto ctx = cuda::DeviceContext::open(device);
  if (!ctx) {
    const int code = ctx.error().code == EINVAL ? EINVAL : ENODEV;
    return fail(code, "streamer: CXLPOOL_STREAM_CUDA needs a usable CUDA device " + std::to_string(device) + ": " +
                          ctx.error().message);
  }
  auto w = std::make_unique<CudaWindow>(std::move(*ctx), device);
  if (auto ok = w->init(slots, staged, slot_bytes, region); !ok) return tl::unexpected(ok.error());
  return std::unique_ptr<DeviceWindow>(std::move(w));
}

#else

Result<std::unique_ptr<DeviceWindow>> open_cuda_window(int, size_t, size_t, uint64_t, std::span<const std::byte>) {
  return fail(ENODEV, "streamer: CXLPOOL_STREAM_CUDA: this libcxlpool was built without CUDA (-Dcuda)");
}

#endif

}  // namespace cxlpool::client
