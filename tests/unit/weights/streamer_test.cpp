// SPDX-License-Identifier: Apache-2.0
// The client's model view and WeightStreamer over an in-memory region built
// as the daemon builds it: bytes of every layer in the window equal the
// file's, from the region (memcpy) and from the files (O_DIRECT), through
// wrap-around decoding passes, pinned layers, and the error paths.
#include <gtest/gtest.h>

#include <fcntl.h>

#include "model_fixture.hpp"
#include "weight_streamer.hpp"
#include "weights_model.hpp"

namespace cxlpool::client {
namespace {

using weights::testing::base_of;
using weights::testing::ModelFixture;

constexpr size_t kElems = 50000;  // 200 KB + 100 KB per layer

cxlpool_streamer_config host_config(uint32_t buffers, uint32_t depth, uint64_t pinned = 0) {
  cxlpool_streamer_config c{};
  c.target = CXLPOOL_STREAM_HOST;
  c.buffers = buffers;
  c.prefetch_depth = depth;
  c.pinned_budget_bytes = pinned;
  return c;
}

void expect_layer(const WeightsModel& m, const cxlpool_streamed_layer& sl) {
  ASSERT_EQ(sl.n_tensors, 2u);
  for (uint32_t i = 0; i < sl.n_tensors; ++i) {
    const auto& t = m.tensor(sl.tensor_index[i]);
    int k = std::string(t.name).find(".mlp.") != std::string::npos ? 0 : 1;
    const auto* f = reinterpret_cast<const float*>(sl.data[i]);
    size_t n = t.bytes / 4;
    ASSERT_EQ(f[0], base_of(static_cast<int>(sl.layer), k)) << t.name;
    ASSERT_EQ(f[n - 1], base_of(static_cast<int>(sl.layer), k) + static_cast<float>(n - 1)) << t.name;
    for (size_t j = 0; j < n; j += 997) ASSERT_EQ(f[j], base_of(static_cast<int>(sl.layer), k) + j) << t.name;
  }
}

// Acquires, checks and releases layers 0..layers-1 in order, `passes` times.
void stream_layers(WeightStreamer& s, const WeightsModel& m, uint32_t layers, int passes) {
  for (int pass = 0; pass < passes; ++pass) {
    for (uint32_t l = 0; l < layers; ++l) {
      cxlpool_streamed_layer sl{};
      ASSERT_TRUE(s.acquire(l, &sl)) << "layer " << l << ", pass " << pass;
      expect_layer(m, sl);
      ASSERT_TRUE(s.release(l)) << "layer " << l << ", pass " << pass;
    }
  }
}

TEST(WeightsModel, TableMatchesTheFiles) {
  ModelFixture fx(6, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ((*m)->layers(), 6);
  EXPECT_EQ((*m)->count(), 13u);
  size_t i = (*m)->find("model.layers.4.mlp.w");
  ASSERT_NE(i, SIZE_MAX);
  const auto& t = (*m)->tensor(i);
  EXPECT_EQ(t.layer, 4);
  EXPECT_EQ(t.file_index, 1u);
  EXPECT_EQ(t.ndim, 1u);
  EXPECT_EQ(t.shape[0], kElems);
  ASSERT_NE(t.data, nullptr);
  EXPECT_EQ(static_cast<const float*>(t.data)[7], base_of(4, 0) + 7);
  EXPECT_EQ((*m)->find("nope"), SIZE_MAX);
  EXPECT_EQ((*m)->tensor((*m)->find("model.embed_tokens.weight")).layer, -1);
}

TEST(WeightStreamer, StreamsFromTheRegionAcrossPasses) {
  ModelFixture fx(6, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, host_config(3, 2));
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_NO_FATAL_FAILURE(stream_layers(**s, *m, 6, 3));
  auto st = (*s)->stats();
  EXPECT_EQ(st.acquires, 18u);
  EXPECT_GE(st.layers_copied, 18u - 3);  // slots are reused: at most the window stays cached
  EXPECT_EQ(st.layers_read, 0u);
  EXPECT_EQ(st.bytes_copied % (kElems * 4 + kElems * 2), 0u);
}

TEST(WeightStreamer, ReadsLayersPastTheBudgetFromTheFiles) {
  // Globals + two layers resident; layers 2..5 stay in the files.
  ModelFixture fx(6, kElems, 256 + 2 * (kElems * 6));
  auto m = WeightsModel::create(fx.client_mapping()).value();
  EXPECT_EQ(m->tensor(m->find("model.layers.2.mlp.w")).data, nullptr);
  auto s = WeightStreamer::create(*m, host_config(2, 1)).value();
  ASSERT_NO_FATAL_FAILURE(stream_layers(*s, *m, 6, 2));
  auto st = s->stats();
  EXPECT_GE(st.layers_read, 8u);
  EXPECT_GE(st.bytes_read, 8u * kElems * 6);
  EXPECT_GE(st.layers_copied, 4u);
}

TEST(WeightStreamer, MultiReadFileLayersStayExactWhileReadsOverlapLayers) {
  // 3.6 MB layers: several 1 MiB reads each, the next layer's issued while
  // the current one's complete; only the globals are resident.
  constexpr size_t kBig = 600000;
  ModelFixture fx(5, kBig, 1);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, host_config(3, 2)).value();
  ASSERT_NO_FATAL_FAILURE(stream_layers(*s, *m, 5, 2));
  auto st = s->stats();
  EXPECT_GE(st.layers_read, 7u);
  EXPECT_EQ(st.layers_copied, 0u);
  EXPECT_GT(st.read_ns_total, 0u);
}

TEST(WeightStreamer, PinsLayersWithinTheBudgetFileLayersFirst) {
  ModelFixture fx(4, kElems, 256 + 2 * (kElems * 6));  // layers 2, 3 in files
  auto m = WeightsModel::create(fx.client_mapping()).value();
  // Room for one layer: the policy pins a file layer.
  auto s = WeightStreamer::create(*m, host_config(2, 1, kElems * 6 + 1024)).value();
  auto st = s->stats();
  EXPECT_EQ(st.pinned_layers, 1u);
  EXPECT_EQ(st.layers_read, 1u);  // filled once at creation
  ASSERT_NO_FATAL_FAILURE(stream_layers(*s, *m, 4, 1));
  EXPECT_EQ(s->stats().hits_resident, 1u);
}

TEST(WeightStreamer, OutOfOrderAndErrors) {
  ModelFixture fx(4, kElems, 0);
  auto m = WeightsModel::create(fx.client_mapping()).value();
  auto s = WeightStreamer::create(*m, host_config(2, 1)).value();
  cxlpool_streamed_layer a{}, b{}, c{};
  ASSERT_TRUE(s->acquire(3, &a));
  expect_layer(*m, a);
  ASSERT_TRUE(s->acquire(1, &b));  // takes the prefetched slot
  expect_layer(*m, b);
  auto busy = s->acquire(2, &c);  // both slots held
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, EBUSY);
  EXPECT_EQ(s->acquire(3, &c).error().code, EBUSY);  // already held
  ASSERT_TRUE(s->release(3));
  EXPECT_EQ(s->release(3).error().code, EINVAL);
  ASSERT_TRUE(s->acquire(2, &c));
  expect_layer(*m, c);
  EXPECT_EQ(s->acquire(9, &c).error().code, EINVAL);

  EXPECT_EQ(WeightStreamer::create(*m, host_config(1, 0)).error().code, EINVAL);
  EXPECT_EQ(WeightStreamer::create(*m, host_config(2, 2)).error().code, EINVAL);
  auto unknown = host_config(2, 1);
  unknown.target = 7;
  EXPECT_EQ(WeightStreamer::create(*m, unknown).error().code, EINVAL);
}

}  // namespace
}  // namespace cxlpool::client
