// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "cxlpool/weights/layer_group.hpp"

namespace cxlpool::weights {
namespace {

TEST(LayerGroup, LlamaAndGpt2Names) {
  EXPECT_EQ(layer_of("model.layers.0.self_attn.q_proj.weight"), 0);
  EXPECT_EQ(layer_of("model.layers.31.mlp.up_proj.weight"), 31);
  EXPECT_EQ(layer_of("transformer.h.11.attn.c_attn.weight"), 11);
  EXPECT_EQ(layer_of("layers.2.w"), 2);
  EXPECT_EQ(layer_of("h.7.ln_1.bias"), 7);
}

TEST(LayerGroup, GlobalsAndLookalikes) {
  EXPECT_EQ(layer_of("model.embed_tokens.weight"), kGlobalLayer);
  EXPECT_EQ(layer_of("model.norm.weight"), kGlobalLayer);
  EXPECT_EQ(layer_of("lm_head.weight"), kGlobalLayer);
  EXPECT_EQ(layer_of("model.layers.x.w"), kGlobalLayer);     // not a number
  EXPECT_EQ(layer_of("model.layers.3"), kGlobalLayer);       // no component after
  EXPECT_EQ(layer_of("model.sublayers.3.w"), kGlobalLayer);  // not a whole component
  EXPECT_EQ(layer_of("model.oh.3.w"), kGlobalLayer);
  EXPECT_EQ(layer_of("model.layers.99999999999.w"), kGlobalLayer);  // absurd
  EXPECT_EQ(layer_of(""), kGlobalLayer);
}

TEST(LayerGroup, GroupsIndices) {
  auto g = group_by_layer({-1, 0, 2, 0, -1, 2});
  EXPECT_EQ(g.global, (std::vector<size_t>{0, 4}));
  ASSERT_EQ(g.layers.size(), 3u);
  EXPECT_EQ(g.layers[0], (std::vector<size_t>{1, 3}));
  EXPECT_TRUE(g.layers[1].empty());
  EXPECT_EQ(g.layers[2], (std::vector<size_t>{2, 5}));
  EXPECT_TRUE(group_by_layer({-1}).layers.empty());
}

}  // namespace
}  // namespace cxlpool::weights
