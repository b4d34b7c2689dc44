// SPDX-License-Identifier: Apache-2.0
// WeightStreamer's CUDA target without a GPU: this program's backend table
// names a "cuda" GpuVmm backend whose copy engine is host memory, so the
// device window (the streamer's only GPU code) runs here. The region's
// registration outcome decides the copy path — direct when the engine
// registers it, staged (counted, and logged once with the engine's reason)
// when it refuses — and every layer arrives byte-exact either way; the
// window opens the backend by name through lib/hal's registry, so a
// backend that is absent, excluded or has no device is ENODEV.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"
#include "streamer_checks.hpp"

namespace cxlpool::hal {
namespace {

// Why the fake driver refuses to register a host range; empty: it registers.
std::string g_refusal;
int g_bound_threads = 0;

class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes), data_(static_cast<std::byte*>(std::aligned_alloc(4096, rounded(bytes)))) {}
  ~HostBuffer() { std::free(data_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  static size_t rounded(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }
  size_t bytes_;
  std::byte* data_;
};

class FakeDeviceBuffer final : public GpuDeviceBuffer {
 public:
  explicit FakeDeviceBuffer(size_t bytes) : memory_(bytes) {}
  uint64_t address() const override { return reinterpret_cast<uint64_t>(memory_.data()); }
  size_t size() const override { return memory_.size(); }

 private:
  HostBuffer memory_;
};

class FakePinnedBuffer final : public GpuPinnedBuffer {
 public:
  explicit FakePinnedBuffer(size_t bytes) : memory_(bytes) {}
  std::byte* data() const override { return memory_.data(); }
  size_t size() const override { return memory_.size(); }

 private:
  HostBuffer memory_;
};

class FakeCopyEngine final : public GpuCopyEngine {
 public:
  const char* name() const override { return "cuda"; }
  int device() const override { return 0; }
  Result<void> bind_thread() override {
    ++g_bound_threads;
    return {};
  }
  Result<std::unique_ptr<GpuDeviceBuffer>> allocate_device(size_t bytes) override {
    return std::make_unique<FakeDeviceBuffer>(bytes);
  }
  Result<std::unique_ptr<GpuPinnedBuffer>> allocate_pinned(size_t bytes) override {
    return std::make_unique<FakePinnedBuffer>(bytes);
  }
  HostRangeRegistration register_host_range(const std::byte*, size_t) override {
    if (!g_refusal.empty()) return {HostCopyPath::kStaged, g_refusal};
    return {HostCopyPath::kDirect, {}};
  }
  Result<void> copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return {};
  }
  Result<void> synchronize() override { return {}; }
};

Result<std::unique_ptr<GpuCopyEngine>> open_fake_engine(int device) {
  if (device != 0) return fail(ENODEV, "fake GPU " + std::to_string(device) + " is not here");
  return std::make_unique<FakeCopyEngine>();
}

BackendReport available() { return {"", "", BackendState::kAvailable, "host memory posing as a GPU"}; }

}  // namespace
}  // namespace cxlpool::hal

CXLPOOL_REGISTER_BACKEND(fakecuda, cxlpool::hal::GpuVmmOps, "cuda", 10, &cxlpool::hal::available,
                         (cxlpool::hal::GpuVmmOps{nullptr, &cxlpool::hal::open_fake_engine}))

namespace cxlpool::hal {

namespace backends {
extern const BackendDescriptor posix;  // drivers/blk/posix
}  // namespace backends

// This program's table: the fake "cuda" and the real posix block engine.
std::span<const BackendTableEntry> linked_backends() {
  static const BackendTableEntry table[] = {
      {&backends::posix, BackendClass::kBlockEngine, "posix", nullptr},
      {&backends::fakecuda, BackendClass::kGpuVmm, "cuda", nullptr},
  };
  return table;
}

}  // namespace cxlpool::hal

namespace cxlpool::client {
namespace {

using testing::cuda_config;

constexpr size_t kElems = 300000;  // 1.2 MB + 0.6 MB per layer: past the non-temporal threshold

// The "device" is host memory: tensors are read in place.
void expect_layer(const WeightsModel& m, const cxlpool_streamed_layer& sl) {
  testing::expect_layer_values(m, sl, [](uint64_t address, size_t) { return reinterpret_cast<const float*>(address); });
}

void stream_passes(const WeightsModel& m, WeightStreamer& s, int layers, int passes) {
  testing::stream_passes(s, layers, passes, [&](const cxlpool_streamed_layer& sl) { expect_layer(m, sl); });
}

class WeightStreamerEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv(hal::kBackendFilterVariable);
    hal::g_refusal.clear();
    hal::g_bound_threads = 0;
  }
  void TearDown() override { ::unsetenv(hal::kBackendFilterVariable); }
};

TEST_F(WeightStreamerEngine, RegisteredRegionGoesUpDirect) {
  weights::testing::ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(2, 1));
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 4, 2);
  testing::expect_direct_copies((*s)->stats(), 4);
  EXPECT_GE(hal::g_bound_threads, 1) << "the copy thread did not bind to the device";
}

TEST_F(WeightStreamerEngine, RefusedRegistrationIsStagedCountedAndLoggedOnceWithTheReason) {
  hal::g_refusal = "cuMemHostRegister: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
  weights::testing::ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  std::vector<std::string> warnings;
  auto s = testing::create_streamer(*m, cuda_config(2, 1), &warnings);
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 4, 2);
  testing::expect_staged_copies((*s)->stats(), 4);
  testing::expect_refusal_logged_once(warnings, hal::g_refusal);
}

// File layers are read into the staging slot and uploaded from it; a
// pinned file layer keeps a device slot of its own, filled once.
TEST_F(WeightStreamerEngine, FileAndPinnedLayersGoUpThroughStaging) {
  weights::testing::ModelFixture fx(5, kElems, 256 + 2 * (kElems * 6));  // layers 2..4 in the files
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(2, 1, kElems * 6 + 1024));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->stats().pinned_layers, 1u);
  stream_passes(*m, **s, 5, 3);
  const auto st = (*s)->stats();
  EXPECT_GE(st.layers_read, 5u);
  EXPECT_EQ(st.hits_resident, 3u);
  testing::expect_direct_copies(st, 4);
}

TEST_F(WeightStreamerEngine, NoUsableBackendIsENODEVWithTheReason) {
  weights::testing::ModelFixture fx(3, 1000, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();

  auto absent_device = WeightStreamer::create(*m, cuda_config(2, 1, 0, 1));
  ASSERT_FALSE(absent_device);
  EXPECT_EQ(absent_device.error().code, ENODEV);
  EXPECT_NE(absent_device.error().message.find("fake GPU 1 is not here"), std::string::npos)
      << absent_device.error().message;

  ::setenv(hal::kBackendFilterVariable, "^cuda", 1);
  auto excluded = WeightStreamer::create(*m, cuda_config(2, 1));
  ASSERT_FALSE(excluded);
  EXPECT_EQ(excluded.error().code, ENODEV);
  EXPECT_NE(excluded.error().message.find("excluded by CXLPOOL_BACKENDS"), std::string::npos)
      << excluded.error().message;
}

}  // namespace
}  // namespace cxlpool::client
