// SPDX-License-Identifier: Apache-2.0
// WeightStreamer with target CUDA: without a usable device it is ENODEV
// with the reason; on a GPU every layer (from the region, from the files,
// pinned) arrives byte-exact in device memory through passes that wrap.
// The region is mapped read-only, as clients map it: region layers go up
// straight from it (registered CU_MEMHOSTREGISTER_READ_ONLY), and when the
// driver refuses the registration they go through staging, counted in the
// stats and logged once with the driver's reason.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda_vmm.hpp"
#include "streamer_checks.hpp"
#include "support/gpu_test_env.hpp"

namespace cxlpool::client {
namespace {

using testing::cuda_config;
using weights::testing::ModelFixture;

constexpr size_t kElems = 300000;  // 1.2 MB + 0.6 MB per layer: staged copies past the non-temporal threshold

TEST(WeightStreamerCuda, WithoutADeviceItIsENODEVWithTheReason) {
  if (cuda::test::gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is here: the GPU cases cover it";
  ModelFixture fx(3, 1000, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(2, 1));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ENODEV);
  EXPECT_NE(s.error().message.find("CUDA"), std::string::npos) << s.error().message;
}

class WeightStreamerGpu : public cuda::test::GpuTest {
 protected:
  // Every tensor of the acquired layer, copied back from the device.
  void expect_device_layer(const WeightsModel& m, const cxlpool_streamed_layer& sl) {
    std::vector<std::byte> bytes;
    testing::expect_layer_values(m, sl, [&](uint64_t address, size_t n) -> const float* {
      auto got = download(address, n);
      if (!got) {
        ADD_FAILURE() << got.error().message;
        return nullptr;
      }
      bytes = std::move(*got);
      return reinterpret_cast<const float*>(bytes.data());
    });
  }

  void stream_passes(const WeightsModel& m, WeightStreamer& s, int layers, int passes) {
    testing::stream_passes(s, layers, passes, [&](const cxlpool_streamed_layer& sl) { expect_device_layer(m, sl); });
  }
};

TEST_F(WeightStreamerGpu, RegionLayersArriveInDeviceMemory) {
  ModelFixture fx(5, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(3, 2));
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 5, 2);
  EXPECT_GE((*s)->stats().layers_copied, 7u);
}

TEST_F(WeightStreamerGpu, ReadOnlyRegionIsRegisteredAndRegionLayersSkipStaging) {
  ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(2, 1));
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 4, 2);
  testing::expect_direct_copies((*s)->stats(), 4);
}

TEST_F(WeightStreamerGpu, RefusedRegistrationIsStagedCountedAndLoggedOnce) {
  ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  // Someone else holds a registration of the region: the driver refuses the
  // streamer's with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED.
  auto other = cuda::HostRegistration::register_range(0, const_cast<std::byte*>(m->base()), m->region_bytes());
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_TRUE(other->read_only());
  std::vector<std::string> warnings;
  auto s = testing::create_streamer(*m, cuda_config(2, 1), &warnings);
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 4, 2);
  testing::expect_staged_copies((*s)->stats(), 4);
  testing::expect_refusal_logged_once(warnings, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED");
}

TEST_F(WeightStreamerGpu, FileLayersGoThroughPinnedStaging) {
  ModelFixture fx(5, kElems, 256 + 2 * (kElems * 6));  // layers 2..4 in the files
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(2, 1));
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 5, 2);
  auto st = (*s)->stats();
  EXPECT_GE(st.layers_read, 5u);
  EXPECT_GE(st.layers_copied, 3u);
}

TEST_F(WeightStreamerGpu, PinnedLayersLiveInDeviceSlotsOfTheirOwn) {
  ModelFixture fx(4, kElems, 256 + 2 * (kElems * 6));  // layers 2, 3 in the files
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, cuda_config(2, 1, kElems * 6 + 1024));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->stats().pinned_layers, 1u);
  stream_passes(*m, **s, 4, 2);
  EXPECT_EQ((*s)->stats().hits_resident, 2u);
}

}  // namespace
}  // namespace cxlpool::client
