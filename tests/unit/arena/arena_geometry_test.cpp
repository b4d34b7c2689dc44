// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "arena_geometry.hpp"

namespace cxlpool::client::arena {
namespace {

cxlpool_kv_arena_config base_config() {
  return {.layers = 4, .kv_heads = 2, .head_dim = 32, .dtype_bytes = 4, .max_batch = 8, .max_context = 1000,
          .page_bytes = 64 * 1024};
}

TEST(ArenaGeometry, ShapesAndStrides) {
  auto g = make_geometry(base_config(), 64 * 1024);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->token_bytes, 2u * 32 * 4);         // 256
  EXPECT_EQ(g->tensors, 8u);
  // 1000 tokens * 256 B = 256000 B -> 4 pages of 64 KiB.
  EXPECT_EQ(g->row_stride, 4u * 65536);
  EXPECT_EQ(g->pages_per_row, 4u);
  EXPECT_EQ(g->tensor_bytes, 8u * 4 * 65536);
  EXPECT_EQ(g->total_bytes, 8u * g->tensor_bytes);
  EXPECT_EQ(g->pages_for(0), 0u);
  EXPECT_EQ(g->pages_for(1), 1u);
  EXPECT_EQ(g->pages_for(256), 1u);
  EXPECT_EQ(g->pages_for(257), 2u);
  EXPECT_EQ(g->lookahead_tokens, 256u);
  EXPECT_EQ(g->region_bytes, 64u << 20);
  EXPECT_EQ(g->page_offset(3, 2, 1), 3 * g->tensor_bytes + 2 * g->row_stride + 65536);
  EXPECT_EQ(g->tensor_offset(1, 1), 3 * g->tensor_bytes);
  EXPECT_EQ(g->chunk_bytes(16), 16u * 256 * 8);
}

TEST(ArenaGeometry, Defaults) {
  auto c = base_config();
  c.page_bytes = 0;
  c.region_bytes = 3 << 20;
  auto g = make_geometry(c, 64 * 1024);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->page_bytes, 2u << 20);
  EXPECT_EQ(g->region_bytes, 4u << 20);  // rounded up to whole pages
  EXPECT_EQ(g->lookahead_tokens, 1000u);  // one page holds more than max_context
}

TEST(ArenaGeometry, RejectsBadConfigs) {
  auto expect_bad = [](auto mutate) {
    auto c = base_config();
    mutate(c);
    auto g = make_geometry(c, 64 * 1024);
    EXPECT_FALSE(g);
    if (!g) {
      EXPECT_EQ(g.error().code, EINVAL);
    }
  };
  expect_bad([](auto& c) { c.layers = 0; });
  expect_bad([](auto& c) { c.kv_heads = 0; });
  expect_bad([](auto& c) { c.dtype_bytes = 3; });
  expect_bad([](auto& c) { c.max_batch = 0; });
  expect_bad([](auto& c) { c.max_context = 0; });
  expect_bad([](auto& c) { c.page_bytes = 96 * 1024; });     // not a power of two
  expect_bad([](auto& c) { c.page_bytes = 32 * 1024; });     // below the granularity
  expect_bad([](auto& c) { c.layout = 7; });
  expect_bad([](auto& c) { c.backend = 9; });
  expect_bad([](auto& c) {                                    // 2^50 bytes of tensors
    c.max_batch = 1u << 20;
    c.max_context = 1u << 20;
  });
  auto c = base_config();
  c.page_bytes = 64 * 1024;
  EXPECT_FALSE(make_geometry(c, 2 << 20));  // cuda-like granularity
}

}  // namespace
}  // namespace cxlpool::client::arena
