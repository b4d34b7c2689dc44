// SPDX-License-Identifier: Apache-2.0
#include "host_copy_engine.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cxlpool::test {
namespace {

// Page-aligned host memory, as device and pinned allocations are.
class HostBlock {
 public:
  explicit HostBlock(size_t bytes)
      : bytes_(bytes), data_(static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))) {}
  ~HostBlock() { std::free(data_); }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  size_t bytes_;
  std::byte* data_;
};

class HostDeviceBuffer final : public hal::GpuDeviceBuffer {
 public:
  explicit HostDeviceBuffer(size_t bytes) : memory_(bytes) {}
  uint64_t address() const override { return reinterpret_cast<uint64_t>(memory_.data()); }
  size_t size() const override { return memory_.size(); }

 private:
  HostBlock memory_;
};

class HostPinnedBuffer final : public hal::GpuPinnedBuffer {
 public:
  explicit HostPinnedBuffer(size_t bytes) : memory_(bytes) {}
  std::byte* data() const override { return memory_.data(); }
  size_t size() const override { return memory_.size(); }

 private:
  HostBlock memory_;
};

class HostCopyEngine final : public hal::GpuCopyEngine {
 public:
  const char* name() const override { return "cuda"; }
  int device() const override { return 0; }
  Result<void> bind_thread() override {
    ++host_copy_engine_log().bound_threads;
    return {};
  }
  Result<std::unique_ptr<hal::GpuDeviceBuffer>> allocate_device(size_t bytes) override {
    return std::make_unique<HostDeviceBuffer>(bytes);
  }
  Result<std::unique_ptr<hal::GpuPinnedBuffer>> allocate_pinned(size_t bytes) override {
    return std::make_unique<HostPinnedBuffer>(bytes);
  }
  hal::HostRangeRegistration register_host_range(const std::byte*, size_t) override {
    const auto& refusal = host_copy_engine_log().refusal;
    if (!refusal.empty()) return {hal::HostCopyPath::kStaged, refusal};
    return {hal::HostCopyPath::kDirect, {}};
  }
  Result<void> copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    if (const int e = host_copy_engine_log().fail_copies_with; e != 0) return fail(e, "copy to device refused");
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    host_copy_engine_log().bytes_to_device += bytes;
    return {};
  }
  Result<void> copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    if (const int e = host_copy_engine_log().fail_copies_with; e != 0) return fail(e, "copy to host refused");
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    host_copy_engine_log().bytes_to_host += bytes;
    return {};
  }
  Result<void> synchronize() override {
    ++host_copy_engine_log().synchronizes;
    return {};
  }
};

}  // namespace

void HostCopyEngineLog::reset() {
  refusal.clear();
  bound_threads = 0;
  bytes_to_device = 0;
  bytes_to_host = 0;
  synchronizes = 0;
  fail_copies_with = 0;
}

HostCopyEngineLog& host_copy_engine_log() {
  static HostCopyEngineLog log;
  return log;
}

Result<std::unique_ptr<hal::GpuCopyEngine>> open_host_copy_engine(int device) {
  if (device != 0) return fail(ENODEV, "fake GPU " + std::to_string(device) + " is not here");
  return std::make_unique<HostCopyEngine>();
}

}  // namespace cxlpool::test
