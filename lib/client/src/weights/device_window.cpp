// SPDX-License-Identifier: Apache-2.0
// DeviceWindow over a hal::GpuCopyEngine: the cuda backend's, opened through
// lib/hal's registry, so this file names no GPU vendor and libcxlpool's
// link step alone decides whether a CUDA target can work.
#include <string>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "device_window.hpp"
#include "window_copy.hpp"

namespace cxlpool::client {
namespace {

class EngineWindow final : public DeviceWindow {
 public:
  explicit EngineWindow(std::unique_ptr<hal::GpuCopyEngine> engine) : engine_(std::move(engine)) {}

  Result<void> init(size_t slots, size_t staged, uint64_t slot_bytes, std::span<const std::byte> region) {
    for (size_t i = 0; i < slots; ++i) {
      auto buf = engine_->allocate_device(slot_bytes);
      if (!buf) return fail(buf.error().code, "streamer: device slot: " + buf.error().message);
      device_slots_.push_back(std::move(*buf));
    }
    for (size_t i = 0; i < staged; ++i) {
      auto buf = engine_->allocate_pinned(slot_bytes);
      if (!buf) return fail(buf.error().code, "streamer: pinned staging slot: " + buf.error().message);
      staging_.push_back(std::move(*buf));
    }
    if (!region.empty()) {
      // Clients map the region read-only, and the engine registers it so. A
      // driver that still refuses costs one staging copy per region layer,
      // nothing else; the streamer reports why.
      const hal::HostRangeRegistration reg = engine_->register_host_range(region.data(), region.size());
      registered_ = reg.path == hal::HostCopyPath::kDirect;
      registration_error_ = reg.reason;
    }
    return {};
  }

  // Queued copies finish before the slots go; the engine outlives them.
  ~EngineWindow() override { (void)engine_->synchronize(); }

  Result<void> bind_thread() override { return engine_->bind_thread(); }
  size_t slots() const override { return device_slots_.size(); }
  std::byte* staging(size_t slot) const override { return staging_[slot < staging_.size() ? slot : 0]->data(); }
  uint64_t device(size_t slot) const override { return device_slots_[slot]->address(); }
  bool region_registered() const override { return registered_; }
  const std::string& registration_error() const override { return registration_error_; }

  Result<void> copy_region(size_t slot, uint64_t dst, const std::byte* src, uint64_t bytes) override {
    if (registered_) {
      // Registered pages are pinned: the DMA engine reads the region itself.
      return engine_->copy_to_device(device(slot) + dst, src, bytes);
    }
    copy_to_window(staging(slot) + dst, src, bytes);
    return upload_staged(slot, dst, bytes);
  }

  Result<void> upload_staged(size_t slot, uint64_t dst, uint64_t bytes) override {
    return engine_->copy_to_device(device(slot) + dst, staging(slot) + dst, bytes);
  }

  Result<void> finish() override { return engine_->synchronize(); }

 private:
  std::unique_ptr<hal::GpuCopyEngine> engine_;  // first: destroyed after the buffers
  std::vector<std::unique_ptr<hal::GpuDeviceBuffer>> device_slots_;
  std::vector<std::unique_ptr<hal::GpuPinnedBuffer>> staging_;
  bool registered_ = false;
  std::string registration_error_;
};

}  // namespace

Result<std::unique_ptr<DeviceWindow>> open_cuda_window(int device, size_t slots, size_t staged, uint64_t slot_bytes,
                                                       std::span<const std::byte> region) {
  if (staged == 0 || staged > slots) return fail(EINVAL, "streamer: bad staging slot count");
  // Not linked into this library, excluded by CXLPOOL_BACKENDS, no driver,
  // no device: all of them leave the caller without a usable device.
  auto engine = hal::open_gpu_copy_engine("cuda", device);
  if (!engine) {
    const int code = engine.error().code == EINVAL ? EINVAL : ENODEV;
    return fail(code, "streamer: CXLPOOL_STREAM_CUDA needs a usable CUDA device " + std::to_string(device) + ": " +
                          engine.error().message);
  }
  auto w = std::make_unique<EngineWindow>(std::move(*engine));
  if (auto ok = w->init(slots, staged, slot_bytes, region); !ok) return tl::unexpected(ok.error());
  return std::unique_ptr<DeviceWindow>(std::move(w));
}

}  // namespace cxlpool::client
