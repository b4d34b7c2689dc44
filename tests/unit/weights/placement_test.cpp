// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "cxlpool/weights/placement.hpp"

namespace cxlpool::weights {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr double kGBps = 1e9;

// 4 layers of 1 MB (10^6 bytes) from the region at 1 GB/s: 1 ms each to copy.
PlacementInput four_layers(double compute_ms) {
  PlacementInput in;
  in.layer_bytes.assign(4, 1'000'000);
  in.compute_ns.assign(4, compute_ms * 1e6);
  in.region_bytes_per_sec = kGBps;
  return in;
}

TEST(Placement, ComputeBoundNeedsOnlyDoubleBuffering) {
  auto plan = plan_placement(four_layers(2.0));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(plan->copy_bound);
  EXPECT_EQ(plan->prefetch_depth, 1u);
  EXPECT_EQ(plan->buffers, 2u);
  EXPECT_DOUBLE_EQ(plan->compute_ns_per_pass, 8e6);
  EXPECT_DOUBLE_EQ(plan->load_ns_per_pass, 4e6);
  EXPECT_NEAR(plan->pass_ns, 8e6, 1);
  EXPECT_NEAR(plan->stall_ns_per_pass, 0, 1);
}

TEST(Placement, CopyBoundPassIsTheCopyTime) {
  auto in = four_layers(0.5);
  auto plan = plan_placement(in);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->copy_bound);
  // The copy engine is the bottleneck: 4 x 1 ms per pass whatever the depth.
  EXPECT_NEAR(plan->pass_ns, 4e6, 1);
  EXPECT_NEAR(plan->stall_ns_per_pass, 2e6, 1);
  EXPECT_EQ(plan->prefetch_depth, 1u);  // deeper buys nothing
}

TEST(Placement, ASlowFileLayerNeedsADeeperWindow) {
  // Layer 0 comes from SSD (3 ms), layers 1..3 from the region (0.5 ms);
  // 1.5 ms of compute each. Depth 1 requests layer 0 while layer 3 runs
  // (1.5 ms: stall 1.5 ms); depth 2 requests it while layers 2 and 3 run.
  PlacementInput in;
  in.layer_bytes = {3'000'000, 500'000, 500'000, 500'000};
  in.layer_source = {LayerSource::kFile, LayerSource::kRegion, LayerSource::kRegion, LayerSource::kRegion};
  in.compute_ns.assign(4, 1.5e6);
  in.region_bytes_per_sec = kGBps;
  in.file_bytes_per_sec = kGBps;
  EXPECT_NEAR(simulate_pass_ns(in, std::vector<bool>(4, false), 1), 7.5e6, 1);
  EXPECT_NEAR(simulate_pass_ns(in, std::vector<bool>(4, false), 2), 6e6, 1);
  auto plan = plan_placement(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->prefetch_depth, 2u);
  EXPECT_EQ(plan->buffers, 3u);
  EXPECT_NEAR(plan->stall_ns_per_pass, 0, 1);
}

TEST(Placement, PinsFileLayersFirstThenTheLargest) {
  PlacementInput in;
  in.layer_bytes = {4 * kMiB, 2 * kMiB, 3 * kMiB, 1 * kMiB};
  in.layer_source = {LayerSource::kRegion, LayerSource::kFile, LayerSource::kRegion, LayerSource::kRegion};
  in.region_bytes_per_sec = 10 * kGBps;
  in.file_bytes_per_sec = kGBps;
  in.pinned_budget_bytes = 6 * kMiB;
  auto plan = plan_placement(in);
  ASSERT_TRUE(plan);
  // The file layer (2), then the largest region layer that fits (4), full.
  EXPECT_EQ(plan->pinned, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(plan->pinned_bytes, 6 * kMiB);
  in.pinned_budget_bytes = 6 * kMiB - 1;  // 2 + 3, then 1 would reach the full 6
  plan = plan_placement(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->pinned, (std::vector<bool>{false, true, true, false}));
  in.pinned_budget_bytes = 0;
  plan = plan_placement(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->pinned_bytes, 0u);
}

TEST(Placement, PinnedLayersCostNoCopy) {
  auto in = four_layers(0.5);
  in.pinned_budget_bytes = 2'000'000;
  auto plan = plan_placement(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->pinned_bytes, 2'000'000u);
  EXPECT_DOUBLE_EQ(plan->load_ns_per_pass, 2e6);
  EXPECT_FALSE(plan->copy_bound);
  EXPECT_NEAR(plan->pass_ns, 2e6, 1);  // compute only
}

TEST(Placement, RejectsInconsistentInput) {
  auto in = four_layers(1);
  in.max_buffers = 1;
  EXPECT_EQ(plan_placement(in).error().code, EINVAL);
  in = four_layers(1);
  in.region_bytes_per_sec = 0;
  EXPECT_FALSE(plan_placement(in));
  in = four_layers(1);
  in.compute_ns.pop_back();
  EXPECT_FALSE(plan_placement(in));
  in = four_layers(1);
  in.layer_source.assign(4, LayerSource::kFile);  // no file bandwidth
  EXPECT_FALSE(plan_placement(in));
  EXPECT_TRUE(plan_placement(PlacementInput{.region_bytes_per_sec = 1}));  // no layers
}

}  // namespace
}  // namespace cxlpool::weights
