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
#include "cxlpool/common/log.hpp"

#include "gpu_test_env.hpp"
#include "model_fixture.hpp"
#include "weight_streamer.hpp"
#include "weights_model.hpp"

namespace cxlpool::client {
namespace {

using weights::testing::base_of;
using weights::testing::ModelFixture;

constexpr size_t kElems = 300000;  // 1.2 MB + 0.6 MB per layer: staged copies past the non-temporal threshold

cxlpool_streamer_config cuda_config(uint32_t buffers, uint32_t depth, uint64_t pinned = 0) {
  cxlpool_streamer_config c{};
  c.target = CXLPOOL_STREAM_CUDA;
  c.device = 0;
  c.buffers = buffers;
  c.prefetch_depth = depth;
  c.pinned_budget_bytes = pinned;
  return c;
}

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
    ASSERT_EQ(sl.n_tensors, 2u);
    for (uint32_t i = 0; i < sl.n_tensors; ++i) {
      const auto& t = m.tensor(sl.tensor_index[i]);
      const int k = std::string(t.name).find(".mlp.") != std::string::npos ? 0 : 1;
      CXLPOOL_ASSERT_OK_AND_ASSIGN(bytes, download(sl.data[i], t.bytes));
      const auto* f = reinterpret_cast<const float*>(bytes.data());
      const size_t n = t.bytes / 4;
      for (size_t j = 0; j < n; j += 499) {
        ASSERT_EQ(f[j], base_of(static_cast<int>(sl.layer), k) + static_cast<float>(j)) << t.name << " at " << j;
      }
      ASSERT_EQ(f[n - 1], base_of(static_cast<int>(sl.layer), k) + static_cast<float>(n - 1)) << t.name;
    }
  }

  void stream_passes(const WeightsModel& m, WeightStreamer& s, int layers, int passes) {
    for (int pass = 0; pass < passes; ++pass) {
      for (uint32_t l = 0; l < static_cast<uint32_t>(layers); ++l) {
        cxlpool_streamed_layer sl{};
        auto ok = s.acquire(l, &sl);
        ASSERT_TRUE(ok) << ok.error().message;
        expect_device_layer(m, sl);
        ASSERT_TRUE(s.release(l));
      }
    }
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
  const auto st = (*s)->stats();
  EXPECT_EQ(st.region_registered, 1u) << "the read-only region was not registered";
  EXPECT_GE(st.layers_direct, 4u);
  EXPECT_EQ(st.bytes_direct, st.bytes_copied);
  EXPECT_EQ(st.layers_staged, 0u);
  EXPECT_EQ(st.bytes_staged, 0u);
}

// Log lines the library produced while a test ran.
std::vector<std::string>* g_lines = nullptr;
void capture(LogLevel level, std::string_view component, std::string_view message, void*) {
  if (g_lines != nullptr && level == LogLevel::kWarning) {
    g_lines->push_back(std::string(component) + ": " + std::string(message));
  }
}

TEST_F(WeightStreamerGpu, RefusedRegistrationIsStagedCountedAndLoggedOnce) {
  ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  // Someone else holds a registration of the region: the driver refuses the
  // streamer's with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED.
  auto other = cuda::HostRegistration::register_range(0, const_cast<std::byte*>(m->base()), m->region_bytes());
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_TRUE(other->read_only());
  std::vector<std::string> lines;
  g_lines = &lines;
  set_log_sink(capture, nullptr, LogLevel::kDebug);
  auto s = WeightStreamer::create(*m, cuda_config(2, 1));
  set_log_sink(nullptr, nullptr, LogLevel::kError);
  g_lines = nullptr;
  ASSERT_TRUE(s) << s.error().message;
  stream_passes(*m, **s, 4, 2);
  const auto st = (*s)->stats();
  EXPECT_EQ(st.region_registered, 0u);
  EXPECT_GE(st.layers_staged, 4u);
  EXPECT_EQ(st.bytes_staged, st.bytes_copied);
  EXPECT_EQ(st.layers_direct, 0u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("staging"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"), std::string::npos) << lines[0];
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
