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
#include "support/host_copy_engine.hpp"

namespace cxlpool::hal {
namespace {

BackendReport available() { return {"", "", BackendState::kAvailable, "host memory posing as a GPU"}; }

}  // namespace
}  // namespace cxlpool::hal

CXLPOOL_REGISTER_BACKEND(fakecuda, cxlpool::hal::GpuVmmOps, "cuda", 10, &cxlpool::hal::available,
                         (cxlpool::hal::GpuVmmOps{nullptr, &cxlpool::test::open_host_copy_engine}))

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
    test::host_copy_engine_log().reset();
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
  EXPECT_GE(test::host_copy_engine_log().bound_threads, 1) << "the copy thread did not bind to the device";
}

TEST_F(WeightStreamerEngine, RefusedRegistrationIsStagedCountedAndLoggedOnceWithTheReason) {
  test::host_copy_engine_log().refusal = "cuMemHostRegister: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
  weights::testing::ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  std::vector<std::string> warnings;
  auto s = testing::create_streamer(*m, cuda_config(2, 1), &warnings);
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 4, 2);
  testing::expect_staged_copies((*s)->stats(), 4);
  testing::expect_refusal_logged_once(warnings, test::host_copy_engine_log().refusal);
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
